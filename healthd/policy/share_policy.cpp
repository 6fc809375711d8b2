#include "policy/share_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "policy/requeue_policy.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd::policy {

std::string share_exceeded(const std::vector<NodeInfo>& table, const NodeInfo& self, bool after_own_drain,
                           double max_share) {
  if (after_own_drain && !self.drained_or_draining()) return {};  // resumed meanwhile: nothing to rank
  const auto ahead = [&](const NodeInfo& n) {
    if (!after_own_drain || !n.reason.starts_with(kReasonPrefix)) return true;
    return std::pair(n.reason_time, n.name) < std::pair(self.reason_time, self.name);
  };
  for (const auto& partition : self.partitions) {
    // `self` is in the table and in the partition: never "0 of 0 drained", which withheld every
    // drain when a cut-off text was read (issue 11).
    std::size_t members = 0, drained = 0;
    for (const auto& n : table) {
      if (!has(n.partitions, partition)) continue;
      ++members;
      if (n.name != self.name && n.drained_or_draining() && ahead(n)) ++drained;
    }
    const auto limit = static_cast<std::size_t>(std::floor(max_share * static_cast<double>(members)));
    if (drained + 1 <= limit) continue;
    return std::to_string(drained) + " of " + std::to_string(members) + " nodes of partition " + partition +
           (after_own_drain ? " were drained before it" : " are drained already") + " (max_drained_share " +
           std::to_string(max_share) + ")";
  }
  return {};
}

// Only a drain ranked ahead of ours that lands after the look just after ours can give ours back at
// the look once its second is over: a healthd drain of the same second with a smaller name, in a
// burst of drains by the daemons of other nodes hit by the same event. How many more will land, and
// ahead of ours, no look can tell: at 64 nodes the drains given back were those of the first few
// daemons to drain (large names, seeing 0-3 others). So any other healthd drain stamped within
// kShareSettle of ours makes the requeue wait for that look; a single fault does not wait. Not
// caught: the very first drain of a burst to land, seeing none of the others yet (bench/RESULTS.md,
// "At cluster scale"). The burst's nodes are kept: a job on one of them besides ours (a few faulty
// nodes of one job) is requeued for that one anyway, and does not wait (policy/requeue_policy).
std::vector<std::string> burst_around(const std::vector<NodeInfo>& table, const NodeInfo& self) {
  std::vector<std::string> burst;
  for (const auto& n : table)
    if (n.name != self.name && n.drained_or_draining() && n.reason.starts_with(kReasonPrefix) &&
        // in double: a reason time is Slurm's field, and no difference of two may overflow
        std::abs(static_cast<double>(n.reason_time) - static_cast<double>(self.reason_time)) <=
            static_cast<double>(kShareSettle.count()))
      burst.push_back(n.name);
  return burst;
}

}  // namespace ar::healthd::policy
