// The requeue entry, carried out in its steps (decide, requeue, annotate, release: state/journal.hpp
// RequeueStep), each saved before its Slurm call; and the follow-up of requeued jobs until they run
// again, for the timeline and the notices. What to do is policy/requeue_policy's answer; this file
// gathers its facts from Slurm and carries the answer out.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "auto_resume/job_comment.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {

// The priority a requeued job waits with under requeue_priority = "top": the largest slurmctld
// accepts (NO_VAL and INFINITE above it mean "no change" and "Slurm's own").
constexpr std::uint32_t kTopPriority = 0xfffffffd;

}  // namespace

std::expected<bool, std::string> SlurmActions::do_requeue(const JournalEntry& e, WallTime now) {
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) {
      spdlog::info("job {} is gone; nothing to requeue", e.job_id);
      return true;
    }
    return std::unexpected(job.error().message);
  }
  owners_[e.job_id] = job->user_id;
  switch (e.step) {
    case RequeueStep::decide: return requeue_decide(e, *job, now);
    case RequeueStep::requeue: return requeue_ask(e, *job, now);
    case RequeueStep::annotate: return requeue_annotate(e, now);
    case RequeueStep::release: return requeue_release(e, now);
  }
  return true;
}

std::expected<bool, std::string> SlurmActions::next_step(const JournalEntry& e, RequeueStep step, WallTime now) {
  if (auto r = journal_.advance(e.id, step); !r) return std::unexpected("journal: " + r.error());
  JournalEntry next = e;
  next.step = step;
  switch (step) {
    case RequeueStep::decide: break;
    case RequeueStep::requeue: {
      auto job = slurm_.job(e.job_id);
      if (!job) return std::unexpected(job.error().message);
      return requeue_ask(next, *job, now);
    }
    case RequeueStep::annotate: return requeue_annotate(next, now);
    case RequeueStep::release: return requeue_release(next, now);
  }
  return true;
}

// A requeue for a fault of this node goes ahead only once the node is out of service (drained,
// draining or to be rebooted), so the job cannot start again on it. Answers why not, or nothing.
std::expected<std::optional<std::string>, std::string> SlurmActions::node_still_schedulable(const JournalEntry& e) {
  if (e.code == kAppFailure || e.code == kStall) return std::optional<std::string>();  // the node is healthy: nothing to wait for
  auto info = slurm_.node(node_);
  if (!info) return std::unexpected(info.error().message);
  if (info->drained_or_draining() || info->reboot_pending()) return std::optional<std::string>();
  return std::optional<std::string>("node " + node_ + " is " + (info->state.empty() ? "in service" : info->state) +
                                    (info->reason.empty() ? "" : " (" + sanitize(info->reason, 120) + ")"));
}

policy::RequeueFacts SlurmActions::requeue_facts(const JournalEntry& e, const JobInfo& job, WallTime now) const {
  policy::RequeueFacts f;
  f.code = e.code;
  f.attempt = e.restart_count;
  f.user_cap = e.cap;
  f.rerun_step = e.rerun_step.has_value();
  f.job_restart_count = job.restart_count;
  f.job_state = job.state;
  f.job_requeue = job.requeue;
  f.job_nodes = job.nodes;
  f.step_reruns = step_reruns_so_far(job);
  f.rerun_asked_elsewhere =
      e.rerun_step && asks_step_rerun(parse_attempt_comment(auto_resume_line(job.admin_comment)), *e.rerun_step, job.restart_count);
  f.max_resumes = policy_.max_resumes;
  f.stall_action = policy_.stall_action;
  f.node = node_;
  for (const auto& d : journal_.pending())
    if (d.kind == Action::drain && d.node == node_) {
      f.drain_pending = d.next_try;
      break;
    }
  if (const auto& own = journal_.own_drain()) {
    f.own_drain = true;
    f.share_look = own->share_look;
    f.burst = own->burst;
  }
  f.now = now;
  return f;
}

// The decision is policy/requeue_policy's; what is here carries it out.
std::expected<bool, std::string> SlurmActions::requeue_decide(const JournalEntry& e, const JobInfo& job, WallTime now) {
  using policy::RequeueVerdict;
  const auto facts = requeue_facts(e, job, now);
  auto d = policy::decide_requeue(facts);
  std::optional<std::string> in_service;  // look_at_node: why the node is still schedulable, if it is
  if (d.verdict == RequeueVerdict::look_at_node) {
    auto schedulable = node_still_schedulable(e);
    if (!schedulable) return std::unexpected(schedulable.error());
    in_service = *schedulable;
    d = policy::after_node_look(facts, in_service.has_value());
  }
  switch (d.verdict) {
    case RequeueVerdict::requeued_elsewhere:
      // Another node's healthd requeued this attempt already (its daemon releases and annotates).
      journal_.mark_requeued(e.job_id, e.restart_count);
      timeline_.record(e.job_id, {now, node_, "requeued elsewhere", "attempt " + std::to_string(e.restart_count + 1) +
                                                                        " was already requeued"});
      follow_up_.follow(e.job_id, e.restart_count + 1, now);
      return true;
    case RequeueVerdict::stall_not_running:
      journal_.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
      timeline_.record(e.job_id, {now, node_, "stall: nothing done", "the job is " + job.state + " now"});
      return true;
    case RequeueVerdict::cap_reached: return resume_cap_reached(e, job, d, now);
    case RequeueVerdict::leave_pending: return true;
    case RequeueVerdict::stall_cancel: return stall_cancel(e, job, now);
    case RequeueVerdict::refuse: return refuse_requeue(e, job, now);
    case RequeueVerdict::wait_for_drain:
      journal_.wait_until(e.id, d.until, "waiting for the drain of " + node_);
      return false;
    case RequeueVerdict::wait_for_share_look:
      journal_.wait_until(e.id, d.until, "waiting for the second look at max_drained_share (drains in a burst)");
      return false;
    case RequeueVerdict::look_at_node: break;  // answered above
    case RequeueVerdict::not_requeued: return leave_on_fault(e, in_service.value_or(""), now);
    case RequeueVerdict::try_rerun: {
      auto rerun = rerun_step(e, job, now);
      if (!rerun) return std::unexpected(rerun.error());
      if (!*rerun) return true;  // the step runs again inside the allocation
      if (!(*rerun)->empty())
        timeline_.record(e.job_id, {now, node_, "not re-run in the allocation", **rerun + "; the job is requeued instead"});
      if (policy::after_rerun_declined(facts).verdict == RequeueVerdict::refuse) return refuse_requeue(e, job, now);
      break;
    }
    case RequeueVerdict::requeue: break;
  }
  return next_step(e, RequeueStep::requeue, now);
}

// The job ends as it would have without auto-resume: said where the user and the admin look, and a
// job still running on a faulty node (or stalled) is cancelled, as it would hold its allocation forever.
std::expected<bool, std::string> SlurmActions::resume_cap_reached(const JournalEntry& e, const JobInfo& job,
                                                                  const policy::RequeueDecision& d, WallTime now) {
  std::string why = "auto-resume: not resumed: the cap of " + std::to_string(d.cap) +
                    " resumes is reached (last failure: " + e.code + " on " + node_ + ")";
  spdlog::error("job {}: {}", e.job_id, why);
  if (auto r = annotate_job(slurm_, e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  if (d.cancel) {
    if (auto r = slurm_.cancel(e.job_id); !r && !gone(r.error())) return std::unexpected(r.error().message);
    why += e.code == kStall ? "; the job, making no progress, is cancelled"
                            : "; the job, still running on a faulty node, is cancelled";
  }
  journal_.mark_requeued(e.job_id, e.restart_count);  // decided: never again for this attempt
  timeline_.record(e.job_id, {now, node_, "resume cap reached", why});
  notice(NoticeKind::resume_cap, e, why, d.cancel ? "cancel" : "none", now);
  return true;
}

// Not drained although faulty: the job is left as it is, and said so (`why_in_service`: what Slurm
// showed of the node).
std::expected<bool, std::string> SlurmActions::leave_on_fault(const JournalEntry& e, const std::string& why_in_service,
                                                              WallTime now) {
  std::string why = why_in_service + " although " + e.code + " persists: " +
                    (withheld_.empty() ? "someone returned it to service, which overrides healthd"
                                       : "the drain was withheld (" + withheld_ + ")") +
                    "; not requeued, so it cannot restart onto the fault";
  if (overridden_ != e.code) spdlog::warn("node {}: {}", node_, why);
  overridden_ = e.code;
  journal_.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
  timeline_.record(e.job_id, {now, node_, "not requeued", why});
  return true;
}

std::expected<bool, std::string> SlurmActions::refuse_requeue(const JournalEntry& e, const JobInfo& job, WallTime now) {
  // Slurm would refuse ("Requested operation is presently disabled"), at every try. Said once, where
  // the user and the admin look, and decided for this attempt.
  std::string why = "auto-resume: not requeued after " + e.code + " on " + node_ +
                    ": the job does not allow requeue (submitted with --no-requeue, or JobRequeue=0 in "
                    "slurm.conf and no --requeue); submit it with --requeue to be resumed";
  spdlog::error("job {}: {}", e.job_id, why);
  if (auto r = annotate_job(slurm_, e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  journal_.mark_requeued(e.job_id, e.restart_count);
  timeline_.record(e.job_id, {now, node_, "not requeued", why});
  return true;
}

// [policy] stall_action = "cancel": the stalled job ends, and its admin comment and timeline say why.
std::expected<bool, std::string> SlurmActions::stall_cancel(const JournalEntry& e, const JobInfo& job, WallTime now) {
  const std::string why = "auto-resume: cancelled: " + e.reason + " while its batch node checked healthy";
  if (auto r = annotate_job(slurm_, e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  if (job.state == "RUNNING")
    if (auto r = slurm_.cancel(e.job_id); !r && !gone(r.error())) return std::unexpected(r.error().message);
  spdlog::warn("job {}: {}", e.job_id, why);
  journal_.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
  timeline_.record(e.job_id, {now, node_, "cancelled", why});
  return true;
}

std::expected<bool, std::string> SlurmActions::requeue_ask(const JournalEntry& e, const JobInfo& job, WallTime now) {
  // This step was saved before Slurm was asked: after a crash the job shows whether the ask landed.
  if (job.restart_count > e.restart_count) {
    journal_.mark_requeued(e.job_id, e.restart_count);
    timeline_.record(e.job_id, {now, node_, "requeued", "attempt " + std::to_string(e.restart_count + 2) + " after " +
                                                            e.code + " on " + node_ + " (seen requeued after a restart)"});
    return next_step(e, RequeueStep::annotate, now);
  }
  auto r = slurm_.requeue(e.job_id);
  if (!r) {
    // slurmctld refuses a second requeue of the same job: whoever raced us won. Check who.
    auto again = slurm_.job(e.job_id);
    if (again && again->restart_count > e.restart_count) {
      journal_.mark_requeued(e.job_id, e.restart_count);
      timeline_.record(e.job_id, {now, node_, "requeued elsewhere", r.error().message});
      follow_up_.follow(e.job_id, e.restart_count + 1, now);
      return true;
    }
    if (gone(r.error())) return true;  // ended meanwhile: nothing to requeue
    return std::unexpected(r.error().message);
  }
  journal_.mark_requeued(e.job_id, e.restart_count);
  timeline_.record(e.job_id, {std::chrono::system_clock::now(), node_, "requeued",
                              "attempt " + std::to_string(e.restart_count + 2) + " after " + e.code + " on " + node_});
  return next_step(e, RequeueStep::annotate, now);
}

std::expected<bool, std::string> SlurmActions::requeue_annotate(const JournalEntry& e, WallTime now) {
  // Before the release: the restarted job reads why its last attempt ended from the admin comment.
  // The attempt counts the job's step re-runs too, and the line keeps their number.
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;
    return std::unexpected(job.error().message);
  }
  const std::uint32_t reruns = step_reruns_so_far(*job);
  std::string line = format_attempt_comment({e.restart_count + reruns + 1, e.code, node_, e.reason, std::nullopt, 0, reruns});
  if (auto c = annotate_job(slurm_, e.job_id, line, job->admin_comment); !c) return std::unexpected(c.error());
  return next_step(e, RequeueStep::release, now);
}

std::expected<bool, std::string> SlurmActions::requeue_release(const JournalEntry& e, WallTime now) {
  // Slurm holds a requeued job (Reason=BeginTime) for minutes. A new begin time lifts it, but only once
  // the job has left COMPLETING: set earlier, slurmctld overrides it when the job's epilog completes
  // (batch_requeue_fini). So wait for PENDING first, as a journal wait (the engine stays free, and a
  // restart picks the wait up again).
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;
    return std::unexpected(job.error().message);
  }
  if (job->state == "COMPLETING" || job->state == "REQUEUED") {
    auto& waits = release_waits_[e.id];
    ++waits;
    // Every 50 ms for the first 5 s (it takes about 0.15 s), then every second: a job whose node
    // never reports the kill must not keep the engine busy; Slurm's own hold ends in minutes anyway.
    journal_.wait_until(e.id, now + (waits < 100 ? std::chrono::milliseconds(50) : std::chrono::milliseconds(1000)),
                        "waiting for job " + std::to_string(e.job_id) + " to leave " + job->state);
    return false;
  }
  release_waits_.erase(e.id);
  const bool raise = policy_.requeue_priority == RequeuePriority::top;
  follow_up_.follow(e.job_id, e.restart_count + 1, now, raise && job->state == "PENDING");
  if (job->state != "PENDING") return true;  // running again already, or ended: nothing to release
  auto schedulable = node_still_schedulable(e);
  if (!schedulable) return std::unexpected(schedulable.error());
  if (*schedulable) {
    timeline_.record(e.job_id, {std::chrono::system_clock::now(), node_, "hold kept",
                                **schedulable + ": the job is not released early onto it"});
    return true;
  }
  // The begin time: one second after the requeue's kill, on slurmctld's clock. slurmd refuses to
  // launch a job whose credential is not newer (in whole seconds) than the kill it revoked ("already
  // killed, do not launch batch job"). slurmctld stamped submit_time when the job left COMPLETING,
  // after the kill, so submit_time + 1 is always safe, and needs no agreement between clocks.
  const std::time_t begin = std::chrono::system_clock::to_time_t(job->submit_time) + 1;
  JobUpdate u;
  u.begin = begin;
  if (raise) u.priority = kTopPriority;
  if (auto r = slurm_.update_job(e.job_id, u); !r) {
    if (gone(r.error())) return true;
    return std::unexpected("releasing the requeue hold: " + r.error().message);
  }
  // slurmctld schedules an updated job in its next queued pass, and skips it there while that begin
  // second has not come; nothing else would queue another pass until the periodic ones (backfill
  // every 30 s, the full pass every 60 s by default). So just after the begin second the job is
  // updated again with the same begin time, which queues one more pass: while Slurm still gives
  // BeginTime as its reason, once at begin + 0.1 s and at most twice more a second apart (this
  // node's clock may run ahead of slurmctld's).
  follow_up_.nudge(e.job_id, e.restart_count + 1, begin);
  timeline_.record(e.job_id, {std::chrono::system_clock::now(), node_, "hold released",
                              std::string("eligible from slurmctld's next second") +
                                  (raise ? "; top priority until it runs (requeue_priority = \"top\")" : "")});
  return true;
}

}  // namespace ar::healthd
