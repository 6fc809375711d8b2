#include "policy/requeue_policy.hpp"

#include <algorithm>

#include "vocabulary/fault_codes.hpp"
#include "vocabulary/slurm_facts.hpp"

namespace ar::healthd::policy {
namespace {

RequeueDecision decided(RequeueVerdict v) { return RequeueDecision{v}; }

RequeueDecision wait_then_decide(RequeueVerdict v, WallTime until, WallTime now) {
  RequeueDecision d{v};
  d.until = std::max(until, now + kShortestWait);
  return d;
}

bool is_node_fault(const RequeueFacts& f) { return !node_stays_in_service(f.code); }

// In a burst of drains (a fabric-wide event) ours may still be given back for max_drained_share at
// its second look; a job requeued before that would be restarted for a node that goes back into
// service. The requeue waits for that look, unless the job is on another node of the burst
// (requeued for that one anyway), and never longer than a look is due after a drain: a look further
// off (a state file's, a clock stepped back) does not hold the job. An unknown burst (after a
// restart) waits.
bool waits_for_share_look(const RequeueFacts& f) {
  if (!f.own_drain || !f.share_look || *f.share_look > f.now + kShareSettle) return false;
  if (!f.burst) return true;
  if (f.burst->empty()) return false;
  return std::none_of(f.job_nodes.begin(), f.job_nodes.end(), [&](const std::string& n) {
    return n != f.node && has(*f.burst, n);
  });
}

RequeueDecision rerun_or_requeue_now(const RequeueFacts& f) {
  return decided(f.rerun_step ? RequeueVerdict::try_rerun : RequeueVerdict::requeue);
}

}  // namespace

RequeueDecision decide_requeue(const RequeueFacts& f) {
  if (f.job_restart_count > f.attempt) return decided(RequeueVerdict::requeued_elsewhere);
  // Ended, cancelled or suspended since the stall was confirmed: a requeue would run a finished job again.
  if ((f.code == kStall || f.code == kStraggler) && f.job_state != "RUNNING")
    return decided(RequeueVerdict::stall_not_running);
  // The user may lower the admin's cap for their job, never raise it. Step re-runs count with the
  // requeues; a re-run another node made for this same failure is not a resume of its own.
  const std::uint32_t cap = std::min(f.max_resumes, f.user_cap.value_or(f.max_resumes));
  if (f.attempt + f.step_reruns >= cap && !f.rerun_asked_elsewhere) {
    RequeueDecision d{RequeueVerdict::cap_reached};
    d.cap = cap;
    // A step that failed has ended the job already; a job hung on the faulty node (or stalled)
    // would hold its allocation forever.
    d.cancel = f.job_state == "RUNNING";
    return d;
  }
  if (f.job_state == "PENDING") return decided(RequeueVerdict::leave_pending);
  if (f.code == kStall && f.stall_action == StallAction::cancel) return decided(RequeueVerdict::stall_cancel);
  if (!f.job_requeue && !f.rerun_step) return decided(RequeueVerdict::refuse);
  if (!is_node_fault(f)) return rerun_or_requeue_now(f);  // the node is healthy: nothing to wait for
  // The drain goes first. A drain that Slurm has not taken yet (slurmctld not answering) keeps the
  // requeue waiting with it, whatever the requeue's own schedule says.
  if (f.drain_pending) return wait_then_decide(RequeueVerdict::wait_for_drain, *f.drain_pending, f.now);
  if (waits_for_share_look(f)) return wait_then_decide(RequeueVerdict::wait_for_share_look, *f.share_look, f.now);
  return decided(RequeueVerdict::look_at_node);
}

RequeueDecision after_node_look(const RequeueFacts& f, bool in_service) {
  // In service although faulty: someone returned it (an admin's resume overrides healthd), or its
  // drain was withheld (max_drained_share). A requeue would send the job back onto the fault, over
  // and over.
  if (in_service) return decided(RequeueVerdict::not_requeued);
  return rerun_or_requeue_now(f);
}

RequeueDecision after_rerun_declined(const RequeueFacts& f) {
  return decided(f.job_requeue ? RequeueVerdict::requeue : RequeueVerdict::refuse);
}

const char* to_string(RequeueVerdict v) {
  switch (v) {
    case RequeueVerdict::requeued_elsewhere: return "requeued_elsewhere";
    case RequeueVerdict::stall_not_running: return "stall_not_running";
    case RequeueVerdict::cap_reached: return "cap_reached";
    case RequeueVerdict::leave_pending: return "leave_pending";
    case RequeueVerdict::stall_cancel: return "stall_cancel";
    case RequeueVerdict::refuse: return "refuse";
    case RequeueVerdict::wait_for_drain: return "wait_for_drain";
    case RequeueVerdict::wait_for_share_look: return "wait_for_share_look";
    case RequeueVerdict::look_at_node: return "look_at_node";
    case RequeueVerdict::not_requeued: return "not_requeued";
    case RequeueVerdict::try_rerun: return "try_rerun";
    case RequeueVerdict::requeue: return "requeue";
  }
  return "requeue";
}

}  // namespace ar::healthd::policy
