#include "vocabulary/remedy.hpp"

#include "vocabulary/names.hpp"

namespace ar::healthd {

std::string to_string(Remedy r) { return name_in(kRemedyNames, r); }
std::optional<Remedy> parse_remedy(const std::string& s) { return value_named(kRemedyNames, s); }
std::string remedy_names(std::span<const Remedy> set) { return names_of(set); }

}  // namespace ar::healthd
