// When healthd returns a node it drained (engine/responder.cpp asks after every healthy sweep): from
// the sweep's facts, typed, into whether the pass counts towards the return and what is journalled,
// a resume or the admin's deep check first. Calls nothing; tests/unit/return_policy_test.cpp is the
// table.
#pragma once

#include <cstdint>
#include <optional>

#include "vocabulary/action.hpp"

namespace ar::healthd::policy {

struct HealthyPass {
  bool own_drain = false;         // healthd drained the node (the journal's own drain)
  bool held = false;              // kept out for an admin: never returned by healthd
  bool full_pass = false;         // a full sweep; a poll sweep never counts
  // Half a check interval since the last pass counted (or none yet): sweeps triggered in a burst
  // (task failures, kernel-log events) are not "N checks in a row"; counted as such, they returned a
  // node within a second of its fault clearing, before the job requeued off it ran elsewhere.
  bool spaced = false;
  bool cure_under_way = false;    // a GPU reset running, a reboot asked for: not a healthy node yet
  std::uint32_t passes_before = 0;    // healthy passes counted so far in this run of them
  std::uint32_t recovery_passes = 3;  // [policy] recovery_passes
  bool deep_checked = false;      // the cure's deep check passed since the fault: the next pass returns it
  bool deep_check_first = false;  // [cure] deep_check set, with deep_check_before_return
  // No requeue pending and no requeued job still on its way elsewhere: the jobs the node failed could
  // otherwise land on it again.
  bool jobs_moved = false;
  bool return_pending = false;    // a resume or a deep check is journalled already
};

struct ReturnDecision {
  bool counted = false;          // the pass counts (its time is the last counted pass)
  std::uint32_t passes = 0;      // the healthy passes counted after it
  std::optional<Action> journal; // resume, or deep_check before it
};

ReturnDecision when_healthy(const HealthyPass& p);

}  // namespace ar::healthd::policy
