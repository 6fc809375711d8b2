#include "policy/notify_policy.hpp"

namespace ar::healthd::policy {

NotifyDecision decide_notify(const std::vector<NotifyFinding>& found, const std::set<std::string>& open, bool full_pass) {
  NotifyDecision d;
  // A sweep that ran only some checks cannot tell an episode is over: it keeps every open one.
  if (!full_pass) d.open = open;
  for (const auto& f : found) {
    const bool was_open = open.contains(f.code);
    if (d.open.insert(f.code).second && !was_open) d.tell.push_back(f);
  }
  return d;
}

}  // namespace ar::healthd::policy
