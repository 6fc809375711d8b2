// max_drained_share: whether draining this node takes one of its partitions past the share, and
// which other healthd drains landed around ours (a burst, as a fabric-wide event makes). Judged on
// one read of Slurm's whole node table; calls nothing. actions/slurm_actions.cpp reads the table,
// asks, and drains, withholds or gives back. tests/unit/share_policy_test.cpp is the table.
#pragma once

#include <string>
#include <vector>

#include "vocabulary/slurm_facts.hpp"

namespace ar::healthd::policy {

// Why draining `self` takes one of its partitions past `max_share` (0..1), judged on Slurm's node
// table `table` (which holds `self`); "" when none. Before our drain (`after_own_drain` false) every
// drained node counts. After it, only those ranked ahead of ours: anyone else's drain (an admin's,
// Slurm's), and healthd drains set earlier (reason time, then name), so that every daemon looking at
// the same records ranks them alike and exactly the ones past the share step back.
std::string share_exceeded(const std::vector<NodeInfo>& table, const NodeInfo& self, bool after_own_drain,
                           double max_share);

// The other healthd drains stamped within kShareSettle of `self`'s (requeue_policy.hpp), as one look
// at the table just after ours saw them.
std::vector<std::string> burst_around(const std::vector<NodeInfo>& table, const NodeInfo& self);

}  // namespace ar::healthd::policy
