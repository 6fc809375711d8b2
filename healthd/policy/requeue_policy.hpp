// Whether, when and how a job whose attempt ended on this node is resumed: the decisions of a
// requeue entry's first step (RequeueStep::decide). Made from typed facts (what the entry says of
// the failure, what Slurm showed of the job a moment ago, the site's policy, this node's own drain,
// the clock) and calls nothing: actions/slurm_actions.cpp gathers the facts, asks, and carries the
// answer out. tests/unit/requeue_policy_test.cpp is the table of answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace ar::healthd {

using WallTime = std::chrono::system_clock::time_point;

namespace policy {

// A drain's second look at max_drained_share comes this long after it. slurmctld stamps a drain with
// its whole second under its node lock, so once that second is over every drain ranked ahead of ours
// (an earlier second, or the same one and a smaller name) is in place. Ours was stamped at the latest
// when it was seen taken; 2 s after that, its second has ended on slurmctld's clock whatever this
// node's clock says.
inline constexpr auto kShareSettle = std::chrono::seconds(2);
// The shortest wait of a requeue that waits for something, so a pass never spins.
inline constexpr auto kShortestWait = std::chrono::milliseconds(50);

struct RequeueFacts {
  // The journal entry: the failure that ended the attempt.
  std::string code;                       // a check's fault code, kAppFailure or kStall
  std::uint32_t attempt = 0;              // the restart count of the attempt that ended
  std::optional<std::uint32_t> user_cap;  // --auto-resume-max of the job, if given
  bool rerun_step = false;                // the job's one auto-resume step here may run again instead
  // The job, as Slurm showed it just now.
  std::uint32_t job_restart_count = 0;
  std::string job_state;                  // RUNNING, PENDING, ...
  bool job_requeue = true;                // the job allows requeue
  std::vector<std::string> job_nodes;
  std::uint32_t step_reruns = 0;          // step re-runs so far (healthd's line in the admin comment)
  bool rerun_asked_elsewhere = false;     // another node's healthd asked this same re-run already
  // The site's policy.
  std::uint32_t max_resumes = 0;
  StallAction stall_action = StallAction::requeue;
  // This node, as its journal holds it.
  std::string node;
  std::optional<WallTime> drain_pending;  // a drain of this node not carried out yet: its next try
  bool own_drain = false;                 // healthd's own drain of this node is in place
  std::optional<WallTime> share_look;     // ...and its second look at max_drained_share, if due
  std::optional<std::vector<std::string>> burst;  // ...and the drains around it (unknown after a restart)
  WallTime now{};
};

enum class RequeueVerdict {
  requeued_elsewhere,   // another node's healthd requeued this attempt already
  stall_not_running,    // a stall of a job that is not running any more says nothing: nothing is done
  cap_reached,          // the resume cap: the job ends as it would without auto-resume (see cancel)
  leave_pending,        // not running (held, or requeued by Slurm itself): nothing now
  stall_cancel,         // a stall, and [policy] stall_action = "cancel"
  refuse,               // the job does not allow requeue: said once, decided for this attempt
  wait_for_drain,       // this node's own drain first: a job released onto a faulty node starts there again
  wait_for_share_look,  // a burst of drains: ours may be given back at its second look
  look_at_node,         // a fault of this node: Slurm's view of the node decides (after_node_look)
  not_requeued,         // the node is in service although faulty: the job would restart onto the fault
  try_rerun,            // run the step again inside the allocation (after_rerun_declined when it cannot)
  requeue,              // on to the requeue's next step
};

struct RequeueDecision {
  RequeueVerdict verdict = RequeueVerdict::requeue;
  WallTime until{};       // wait_for_*: when to decide again
  std::uint32_t cap = 0;  // cap_reached: the cap that applied
  bool cancel = false;    // cap_reached: the job still runs (on a faulty node, or stalled): it is cancelled
};

RequeueDecision decide_requeue(const RequeueFacts& f);

// After look_at_node. `in_service`: Slurm shows the node neither drained, draining nor to be rebooted.
RequeueDecision after_node_look(const RequeueFacts& f, bool in_service);

// After try_rerun, when the step could not run again inside the allocation.
RequeueDecision after_rerun_declined(const RequeueFacts& f);

// What the verdict is called in logs and tests.
const char* to_string(RequeueVerdict v);

}  // namespace policy
}  // namespace ar::healthd
