#include "vocabulary/action.hpp"

#include "vocabulary/names.hpp"

namespace ar::healthd {

std::string to_string(Action a) { return name_in(kActionNames, a); }
std::optional<Action> parse_action(const std::string& s) { return value_named(kActionNames, s); }
std::string action_names(std::span<const Action> set) { return names_of(set); }

}  // namespace ar::healthd
