#include "checks/check.hpp"

#include "state/atomic_file.hpp"

namespace ar::healthd {

std::string to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::warn: return "warn";
    case Status::fault: return "fault";
    case Status::error: return "error";
  }
  return "error";
}

Status status_for(Remedy a) {
  if (a == Remedy::none) return Status::ok;
  return keeps_node_in(a) ? Status::warn : Status::fault;
}

std::set<std::string> held_codes(const std::vector<CheckResult>& results) {
  std::set<std::string> held;
  for (const auto& r : results) {
    if (r.status != Status::ok && !r.code.empty()) held.insert(r.code);
    held.insert(r.also_held.begin(), r.also_held.end());
  }
  return held;
}

nlohmann::json CheckResult::to_json() const {
  nlohmann::json j = {{"check", check},
          {"status", to_string(status)},
          {"code", code},
          {"message", message},
          {"action", to_string(action)},
          {"duration_ms", duration.count()},
          {"at_ms", to_epoch_ms(at)},
          {"detail", detail}};
  if (!applicable) j["applicable"] = false;
  if (!gpus.empty()) j["gpus"] = gpus;
  if (checkpoint_first)
    j["checkpoint_first"] = {{"signal", checkpoint_first->signal}, {"grace_s", checkpoint_first->grace.count()}};
  return j;
}

}  // namespace ar::healthd
