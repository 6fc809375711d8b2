#include "policy/return_policy.hpp"

namespace ar::healthd::policy {

ReturnDecision when_healthy(const HealthyPass& p) {
  ReturnDecision d{.counted = false, .passes = p.passes_before, .journal = std::nullopt};
  if (!p.own_drain || p.held || !p.full_pass || !p.spaced || p.cure_under_way) return d;
  d.counted = true;
  d.passes = p.passes_before + 1;
  // A deep check that passed returns the node at the next healthy pass after it.
  if ((d.passes < p.recovery_passes && !p.deep_checked) || !p.jobs_moved) return d;
  // The admin's deep check stands between a node healthd drained and its return; it journals the
  // resume when it passes.
  if (!p.return_pending) d.journal = p.deep_check_first && !p.deep_checked ? Action::deep_check : Action::resume;
  d.passes = 0;
  return d;
}

}  // namespace ar::healthd::policy
