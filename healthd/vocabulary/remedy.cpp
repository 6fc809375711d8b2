#include "vocabulary/remedy.hpp"

namespace ar::healthd {

std::string to_string(Remedy r) {
  for (const auto& [remedy, name] : kRemedyNames)
    if (remedy == r) return std::string(name);
  return "none";
}

std::optional<Remedy> parse_remedy(const std::string& s) {
  for (const auto& [remedy, name] : kRemedyNames)
    if (name == s) return remedy;
  return std::nullopt;
}

std::string remedy_names(std::span<const Remedy> set) {
  std::string out;
  for (auto r : set) out += (out.empty() ? "" : ", ") + to_string(r);
  return out;
}

}  // namespace ar::healthd
