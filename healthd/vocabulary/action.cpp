#include "vocabulary/action.hpp"

namespace ar::healthd {

std::string to_string(Action a) {
  for (const auto& [action, name] : kActionNames)
    if (action == a) return std::string(name);
  return "none";
}

std::optional<Action> parse_action(const std::string& s) {
  for (const auto& [action, name] : kActionNames)
    if (name == s) return action;
  return std::nullopt;
}

std::string action_names(std::span<const Action> set) {
  std::string out;
  for (auto a : set) out += (out.empty() ? "" : ", ") + to_string(a);
  return out;
}

}  // namespace ar::healthd
