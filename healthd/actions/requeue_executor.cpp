// The requeue entry, carried out in its steps (decide, requeue, annotate, release: state/journal.hpp
// RequeueStep), each saved before its Slurm call; the job requeued is handed to the follow-up
// (requeue_follow_up.hpp) until it runs again. What to do is policy/requeue_policy's answer; this
// file gathers its facts from Slurm and carries the answer out.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "actions/step_rerun.hpp"
#include "auto_resume/job_comment.hpp"
#include "policy/requeue_policy.hpp"
#include "policy/suspect_policy.hpp"
#include "text/text.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd {
namespace {

// The priority a requeued job waits with under requeue_priority = "top": the largest slurmctld
// accepts (NO_VAL and INFINITE above it mean "no change" and "Slurm's own").
constexpr std::uint32_t kTopPriority = 0xfffffffd;

// Saves `step` as the requeue's next step, then carries it out (defined below the steps it leads to).
std::expected<bool, std::string> next_step(const ExecutorServices& services, const JournalEntry& e, RequeueStep step, WallTime now);

// A requeue for a fault of this node goes ahead only once the node is out of service (drained,
// draining or to be rebooted), so the job cannot start again on it. Answers why not, or nothing.
std::expected<std::optional<std::string>, std::string> node_still_schedulable(const ExecutorServices& services, const JournalEntry& e) {
  if (node_stays_in_service(e.code)) return std::optional<std::string>();  // the node is healthy: nothing to wait for
  auto info = services.slurm.node(services.node);
  if (!info) return std::unexpected(info.error().message);
  if (info->drained_or_draining() || info->reboot_pending()) return std::optional<std::string>();
  return std::optional<std::string>("node " + services.node + " is " + (info->state.empty() ? "in service" : info->state) +
                                    (info->reason.empty() ? "" : " (" + sanitize(info->reason, 120) + ")"));
}

policy::RequeueFacts requeue_facts(const ExecutorServices& services, const JournalEntry& e, const JobInfo& job, WallTime now) {
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
  f.max_resumes = services.policy.max_resumes;
  f.stall_action = services.policy.stall_action;
  f.node = services.node;
  for (const auto& d : services.journal.pending())
    if (d.kind == Action::drain && d.node == services.node) {
      f.drain_pending = d.next_try;
      break;
    }
  if (const auto& own = services.journal.own_drain()) {
    f.own_drain = true;
    f.share_look = own->share_look;
    f.burst = own->burst;
  }
  f.now = now;
  return f;
}

// The job ends as it would have without auto-resume: said where the user and the admin look, and a
// job still running on a faulty node (or stalled) is cancelled, as it would hold its allocation forever.
std::expected<bool, std::string> resume_cap_reached(const ExecutorServices& services, const JournalEntry& e, const JobInfo& job,
                                                                  const policy::RequeueDecision& d, WallTime now) {
  std::string why = "auto-resume: not resumed: the cap of " + std::to_string(d.cap) +
                    " resumes is reached (last failure: " + e.code + " on " + services.node + ")";
  spdlog::error("job {}: {}", e.job_id, why);
  if (auto r = annotate_job(services.slurm, e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  if (d.cancel) {
    if (auto r = services.slurm.cancel(e.job_id); !r && !gone(r.error())) return std::unexpected(r.error().message);
    why += e.code == kStall ? "; the job, making no progress, is cancelled"
                            : "; the job, still running on a faulty node, is cancelled";
  }
  services.journal.mark_requeued(e.job_id, e.restart_count);  // decided: never again for this attempt
  services.timeline.record(e.job_id, {now, services.node, "resume cap reached", why});
  raise_notice(services, NoticeKind::resume_cap, e, why, d.cancel ? "cancel" : "none", now);
  return true;
}

// Not drained although faulty: the job is left as it is, and said so (`why_in_service`: what Slurm
// showed of the node).
std::expected<bool, std::string> leave_on_fault(const ExecutorServices& services, const JournalEntry& e, const std::string& why_in_service,
                                                              WallTime now) {
  std::string why = why_in_service + " although " + e.code + " persists: " +
                    (services.memory.withheld.empty() ? "someone returned it to service, which overrides healthd"
                                       : "the drain was withheld (" + services.memory.withheld + ")") +
                    "; not requeued, so it cannot restart onto the fault";
  if (services.memory.overridden != e.code) spdlog::warn("node {}: {}", services.node, why);
  services.memory.overridden = e.code;
  services.journal.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
  services.timeline.record(e.job_id, {now, services.node, "not requeued", why});
  return true;
}

std::expected<bool, std::string> refuse_requeue(const ExecutorServices& services, const JournalEntry& e, const JobInfo& job, WallTime now) {
  // Slurm would refuse ("Requested operation is presently disabled"), at every try. Said once, where
  // the user and the admin look, and decided for this attempt.
  std::string why = "auto-resume: not requeued after " + e.code + " on " + services.node +
                    ": the job does not allow requeue (submitted with --no-requeue, or JobRequeue=0 in "
                    "slurm.conf and no --requeue); submit it with --requeue to be resumed";
  spdlog::error("job {}: {}", e.job_id, why);
  if (auto r = annotate_job(services.slurm, e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  services.journal.mark_requeued(e.job_id, e.restart_count);
  services.timeline.record(e.job_id, {now, services.node, "not requeued", why});
  return true;
}

// [policy] stall_action = "cancel": the stalled job ends, and its admin comment and timeline say why.
std::expected<bool, std::string> stall_cancel(const ExecutorServices& services, const JournalEntry& e, const JobInfo& job, WallTime now) {
  const std::string why = "auto-resume: cancelled: " + e.reason + " while its batch node checked healthy";
  if (auto r = annotate_job(services.slurm, e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  if (job.state == "RUNNING")
    if (auto r = services.slurm.cancel(e.job_id); !r && !gone(r.error())) return std::unexpected(r.error().message);
  spdlog::warn("job {}: {}", e.job_id, why);
  services.journal.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
  services.timeline.record(e.job_id, {now, services.node, "cancelled", why});
  return true;
}

std::expected<bool, std::string> requeue_release(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  // Slurm holds a requeued job (Reason=BeginTime) for minutes. A new begin time lifts it, but only once
  // the job has left COMPLETING: set earlier, slurmctld overrides it when the job's epilog completes
  // (batch_requeue_fini). So wait for PENDING first, as a journal wait (the engine stays free, and a
  // restart picks the wait up again).
  auto job = services.slurm.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;
    return std::unexpected(job.error().message);
  }
  if (job->state == "COMPLETING" || job->state == "REQUEUED") {
    // Every 50 ms for the first 5 s (it takes about 0.15 s), then every second: a job whose node
    // never reports the kill must not keep the engine busy; Slurm's own hold ends in minutes anyway.
    const auto every = e.waits < 99 ? std::chrono::milliseconds(50) : std::chrono::milliseconds(1000);
    services.journal.wait_until(e.id, now + every, "waiting for job " + std::to_string(e.job_id) + " to leave " + job->state);
    return false;
  }
  const bool raise = services.policy.requeue_priority == RequeuePriority::top;
  services.follow_up.follow(e.job_id, e.restart_count + 1, now, raise && job->state == "PENDING");
  if (job->state != "PENDING") return true;  // running again already, or ended: nothing to release
  auto schedulable = node_still_schedulable(services, e);
  if (!schedulable) return std::unexpected(schedulable.error());
  if (*schedulable) {
    services.timeline.record(e.job_id, {std::chrono::system_clock::now(), services.node, "hold kept",
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
  // The stall's suspects, in the same update that lifts the hold: the scheduler never sees the job
  // eligible without them.
  if (!e.exclude.empty()) u.excluded = e.exclude;
  if (auto r = services.slurm.update_job(e.job_id, u); !r) {
    if (gone(r.error())) return true;
    return std::unexpected("releasing the requeue hold: " + r.error().message);
  }
  // slurmctld schedules an updated job in its next queued pass, and skips it there while that begin
  // second has not come; nothing else would queue another pass until the periodic ones (backfill
  // every 30 s, the full pass every 60 s by default). So just after the begin second the job is
  // updated again with the same begin time, which queues one more pass: while Slurm still gives
  // BeginTime as its reason, once at begin + 0.1 s and at most twice more a second apart (this
  // node's clock may run ahead of slurmctld's).
  services.follow_up.nudge(e.job_id, e.restart_count + 1, begin);
  services.timeline.record(e.job_id, {std::chrono::system_clock::now(), services.node, "hold released",
                              std::string("eligible from slurmctld's next second") +
                                  (raise ? "; top priority until it runs (requeue_priority = \"top\")" : "")});
  return true;
}

std::expected<bool, std::string> requeue_annotate(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  // Before the release: the restarted job reads why its last attempt ended from the admin comment.
  // The attempt counts the job's step re-runs too, and the line keeps their number.
  auto job = services.slurm.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;
    return std::unexpected(job.error().message);
  }
  const std::uint32_t reruns = step_reruns_so_far(*job);
  // A stall's suspects: said first on the attempt's line (it is cut at its length), and on a line of
  // their own that the nodes named read back (auto_resume/job_comment.hpp SuspectsLine).
  const auto suspects = suspects_line(e.suspects, e.restart_count + 1);
  const std::string message = suspects ? suspects->why + "; " + e.reason : e.reason;
  std::string line = format_attempt_comment({e.restart_count + reruns + 1, e.code, services.node, message, std::nullopt, 0, reruns});
  // The attempt line first, then the suspects line (one update).
  auto c = suspects ? annotate_job(services.slurm, e.job_id, e.suspects, merge_admin_comment(job->admin_comment, line))
                    : annotate_job(services.slurm, e.job_id, line, job->admin_comment);
  if (!c) return std::unexpected(c.error());
  return next_step(services, e, RequeueStep::release, now);
}

std::expected<bool, std::string> requeue_ask(const ExecutorServices& services, const JournalEntry& e, const JobInfo& job, WallTime now) {
  // This step was saved before Slurm was asked: after a crash the job shows whether the ask landed.
  if (job.restart_count > e.restart_count) {
    services.journal.mark_requeued(e.job_id, e.restart_count);
    services.timeline.record(e.job_id, {now, services.node, "requeued", "attempt " + std::to_string(e.restart_count + 2) + " after " +
                                                            e.code + " on " + services.node + " (seen requeued after a restart)"});
    return next_step(services, e, RequeueStep::annotate, now);
  }
  auto r = services.slurm.requeue(e.job_id);
  if (!r) {
    // slurmctld refuses a second requeue of the same job: whoever raced us won. Check who.
    auto again = services.slurm.job(e.job_id);
    if (again && again->restart_count > e.restart_count) {
      services.journal.mark_requeued(e.job_id, e.restart_count);
      services.timeline.record(e.job_id, {now, services.node, "requeued elsewhere", r.error().message});
      services.follow_up.follow(e.job_id, e.restart_count + 1, now);
      return true;
    }
    if (gone(r.error())) return true;  // ended meanwhile: nothing to requeue
    return std::unexpected(r.error().message);
  }
  services.journal.mark_requeued(e.job_id, e.restart_count);
  services.timeline.record(e.job_id, {std::chrono::system_clock::now(), services.node, "requeued",
                              "attempt " + std::to_string(e.restart_count + 2) + " after " + e.code + " on " + services.node});
  return next_step(services, e, RequeueStep::annotate, now);
}

std::expected<bool, std::string> next_step(const ExecutorServices& services, const JournalEntry& e, RequeueStep step, WallTime now) {
  if (auto r = services.journal.advance(e.id, step); !r) return std::unexpected("journal: " + r.error());
  JournalEntry next = e;
  next.step = step;
  next.waits = 0;
  switch (step) {
    case RequeueStep::decide: break;
    case RequeueStep::requeue: {
      auto job = services.slurm.job(e.job_id);
      if (!job) return std::unexpected(job.error().message);
      return requeue_ask(services, next, *job, now);
    }
    case RequeueStep::annotate: return requeue_annotate(services, next, now);
    case RequeueStep::release: return requeue_release(services, next, now);
  }
  return true;
}

// A stall's requeue, once it goes ahead: which nodes the job's next attempt is kept off, from the
// evidence the job's nodes wrote in its admin comment (policy/suspect_policy.hpp), saved in the entry
// before the requeue so a restart carries out the same decision. Answers the entry as saved.
std::expected<JournalEntry, std::string> decide_suspects(const ExecutorServices& services, const JournalEntry& e,
                                                         const JobInfo& job, WallTime now) {
  policy::SuspectFacts facts;
  // A straggler's node names itself (the entry is its own); a stall's nodes wrote their lines. (An
  // if, not a conditional over a braced temporary: gcc 16 warns of a dangling pointer there.)
  if (e.code == kStraggler) facts.evidence.push_back({e.restart_count + 1, e.node, e.reason});
  else facts.evidence = evidence_lines(job.admin_comment, e.restart_count + 1);
  facts.job_nodes = job.nodes;
  facts.excluded = job.excluded;
  facts.required = job.required;
  facts.partition = job.partition;
  facts.max_share = services.policy.suspect_max_share;
  // No node wrote any: a job with one heartbeat, or one whose every rank was busy. A plain STALL, as
  // before per-rank heartbeats, with nothing more said.
  if (facts.evidence.empty()) return e;
  auto table = services.slurm.node_table();
  if (!table) return std::unexpected(table.error().message);
  facts.node_table = std::move(*table);
  const auto verdict = policy::judge_suspects(facts);
  for (const auto& s : verdict.suspects)
    services.timeline.record(e.job_id, {now, services.node, "suspect " + s.node, s.text});
  services.timeline.record(e.job_id, {now, services.node, verdict.exclude.empty() ? "no node kept off" : "kept off",
                                      verdict.why});
  spdlog::warn("job {}: {}: {}", e.job_id, e.code == kStraggler ? "straggler" : "stall", verdict.why);
  SuspectsLine line{e.restart_count + 1, {}, verdict.why};
  for (const auto& s : verdict.suspects) line.nodes.push_back(s.node);
  const std::string said = format_suspects_line(line);
  if (auto r = services.journal.set_suspects(e.id, verdict.exclude, said); !r) return std::unexpected("journal: " + r.error());
  JournalEntry decided = e;
  decided.exclude = verdict.exclude;
  decided.suspects = said;
  return decided;
}

// The decision is policy/requeue_policy's; what is here carries it out.
std::expected<bool, std::string> requeue_decide(const ExecutorServices& services, const JournalEntry& e, const JobInfo& job, WallTime now) {
  using policy::RequeueVerdict;
  const auto facts = requeue_facts(services, e, job, now);
  auto d = policy::decide_requeue(facts);
  std::optional<std::string> in_service;  // look_at_node: why the node is still schedulable, if it is
  if (d.verdict == RequeueVerdict::look_at_node) {
    auto schedulable = node_still_schedulable(services, e);
    if (!schedulable) return std::unexpected(schedulable.error());
    in_service = *schedulable;
    d = policy::after_node_look(facts, in_service.has_value());
  }
  switch (d.verdict) {
    case RequeueVerdict::requeued_elsewhere:
      // Another node's healthd requeued this attempt already (its daemon releases and annotates).
      services.journal.mark_requeued(e.job_id, e.restart_count);
      services.timeline.record(e.job_id, {now, services.node, "requeued elsewhere", "attempt " + std::to_string(e.restart_count + 1) +
                                                                        " was already requeued"});
      services.follow_up.follow(e.job_id, e.restart_count + 1, now);
      return true;
    case RequeueVerdict::stall_not_running:
      services.journal.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
      services.timeline.record(e.job_id, {now, services.node, e.code == kStraggler ? "straggler: nothing done" : "stall: nothing done",
                                          "the job is " + job.state + " now"});
      return true;
    case RequeueVerdict::cap_reached: return resume_cap_reached(services, e, job, d, now);
    case RequeueVerdict::leave_pending: return true;
    case RequeueVerdict::stall_cancel: return stall_cancel(services, e, job, now);
    case RequeueVerdict::refuse: return refuse_requeue(services, e, job, now);
    case RequeueVerdict::wait_for_drain:
      services.journal.wait_until(e.id, d.until, "waiting for the drain of " + services.node);
      return false;
    case RequeueVerdict::wait_for_share_look:
      services.journal.wait_until(e.id, d.until, "waiting for the second look at max_drained_share (drains in a burst)");
      return false;
    case RequeueVerdict::look_at_node: break;  // answered above
    case RequeueVerdict::not_requeued: return leave_on_fault(services, e, in_service.value_or(""), now);
    case RequeueVerdict::try_rerun: {
      auto rerun = rerun_step(services, e, job, now);
      if (!rerun) return std::unexpected(rerun.error());
      if (!*rerun) return true;  // the step runs again inside the allocation
      if (!(*rerun)->empty())
        services.timeline.record(e.job_id, {now, services.node, "not re-run in the allocation", **rerun + "; the job is requeued instead"});
      if (policy::after_rerun_declined(facts).verdict == RequeueVerdict::refuse) return refuse_requeue(services, e, job, now);
      break;
    }
    case RequeueVerdict::requeue: break;
  }
  if ((e.code == kStall || e.code == kStraggler) && e.suspects.empty()) {
    auto decided = decide_suspects(services, e, job, now);
    if (!decided) return std::unexpected(decided.error());
    // A straggler's requeue is only worth its restart without the node: kept on, the job runs on
    // as it is (said in the timeline), and a fault later in this attempt is still acted on.
    if (e.code == kStraggler && decided->exclude.empty()) return true;
    return next_step(services, *decided, RequeueStep::requeue, now);
  }
  return next_step(services, e, RequeueStep::requeue, now);
}

// The entry's current step, carried out: true when the requeue is finished.
std::expected<bool, std::string> requeue_from_its_step(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  auto job = services.slurm.job(e.job_id);
  if (!job) {
    if (gone(job.error())) {
      spdlog::info("job {} is gone; nothing to requeue", e.job_id);
      return true;
    }
    return std::unexpected(job.error().message);
  }
  services.owners[e.job_id] = job->user_id;
  switch (e.step) {
    case RequeueStep::decide: return requeue_decide(services, e, *job, now);
    case RequeueStep::requeue: return requeue_ask(services, e, *job, now);
    case RequeueStep::annotate: return requeue_annotate(services, e, now);
    case RequeueStep::release: return requeue_release(services, e, now);
  }
  return true;
}

}  // namespace

std::expected<Carried, std::string> carry_out_requeue(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  auto finished = requeue_from_its_step(services, e, now);
  if (!finished) return std::unexpected(finished.error());
  // Requeued by us: the entry got past its requeue step, in this pass or an earlier one (the admin's
  // hooks on requeue follow it then, not after a requeue another node's healthd made).
  const auto* current = services.journal.find(e.id);
  const bool requeued = current != nullptr && current->step >= RequeueStep::annotate;
  const auto suspects = current != nullptr ? suspects_line(current->suspects, e.restart_count + 1) : std::nullopt;
  const std::string said = suspects ? suspects->why : std::string();
  return Carried{.finished = *finished, .acted = requeued ? std::optional<Action>(Action::requeue) : std::nullopt, .admin_outcome = {}, .detail = said};
}

}  // namespace ar::healthd
