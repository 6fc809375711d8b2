#include "vocabulary/check_result.hpp"

namespace ar::healthd {

std::set<std::string> held_codes(const std::vector<CheckResult>& results) {
  std::set<std::string> held;
  for (const auto& r : results) {
    if (r.status != Status::ok && !r.code.empty()) held.insert(r.code);
    held.insert(r.also_held.begin(), r.also_held.end());
  }
  return held;
}

nlohmann::json CheckResult::to_json() const {
  const auto at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
  nlohmann::json j = {{"check", check},
          {"status", to_string(status)},
          {"code", code},
          {"message", message},
          {"action", to_string(action)},
          {"duration_ms", duration.count()},
          {"at_ms", at_ms},
          {"detail", detail}};
  if (!applicable) j["applicable"] = false;
  if (!gpus.empty()) j["gpus"] = gpus;
  if (checkpoint_first)
    j["checkpoint_first"] = {{"signal", checkpoint_first->signal}, {"grace_s", checkpoint_first->grace.count()}};
  return j;
}

}  // namespace ar::healthd
