#include "responder.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include <spdlog/spdlog.h>

#include "auto_resume/job_comment.hpp"

namespace ar::healthd {
namespace {

constexpr const char* kReasonPrefix = "healthd:";

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// The worst fault among results: fault status only (a broken check says nothing about the node).
std::optional<CheckResult> worst_fault(const std::vector<CheckResult>& results) {
  std::optional<CheckResult> worst;
  for (const auto& r : results)
    if (r.status == Status::fault && r.action >= Action::drain && (!worst || r.action > worst->action)) worst = r;
  return worst;
}

}  // namespace

Responder::Responder(std::string node, PolicyConfig policy, SlurmClient& slurm, Journal& journal, Timeline& timeline)
    : node_(std::move(node)), policy_(policy), slurm_(slurm), journal_(journal), timeline_(timeline) {}

void Responder::journal(JournalEntry e) {
  if (auto r = journal_.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
}

std::string Responder::drain_reason(const CheckResult& fault, bool held) const {
  std::string reason = std::string(kReasonPrefix) + " " + fault.code + ": " + fault.message;
  if (held)
    reason += " (" + std::to_string(policy_.flap_max_faults) + " faults within " +
              std::to_string(policy_.flap_window.count()) + " s: kept out until an admin resumes it)";
  // Slurm reasons are one line; keep them short enough to read in sinfo -R.
  if (reason.size() > 240) reason = reason.substr(0, 237) + "...";
  return reason;
}

bool Responder::flapping(WallTime now) {
  auto& history = journal_.fault_history();
  std::erase_if(history, [&](WallTime t) { return now - t > policy_.flap_window; });
  return history.size() >= policy_.flap_max_faults;
}

JournalEntry Responder::entry(ActionKind kind, std::string code, WallTime now) const {
  JournalEntry e;
  e.kind = kind;
  e.node = node_;
  e.code = std::move(code);
  e.created = now;
  e.next_try = now;
  return e;
}

void Responder::queue_signal(const LocalJob& job, const CheckResult& fault, WallTime now) {
  if (journal_.signalled(job.job_id, job.restart_count) ||
      journal_.has_pending(ActionKind::signal, job.job_id, job.restart_count))
    return;
  JournalEntry e = entry(ActionKind::signal, fault.code, now);
  e.job_id = job.job_id;
  e.restart_count = job.restart_count;
  e.reason = fault.checkpoint_first->signal;
  journal(e);
}

void Responder::queue_requeue(const LocalJob& job, const CheckResult& fault, WallTime now, WallTime not_before) {
  if (journal_.requeued(job.job_id, job.restart_count)) return;
  if (journal_.has_pending(ActionKind::requeue, job.job_id, job.restart_count)) {
    // Waiting out a checkpoint grace, and now a fault that cannot wait: requeue sooner.
    if (auto r = journal_.hasten(ActionKind::requeue, job.job_id, job.restart_count, not_before); !r)
      spdlog::error("journal: {}", r.error());
    return;
  }
  JournalEntry e = entry(ActionKind::requeue, fault.code, now);
  e.job_id = job.job_id;
  e.restart_count = job.restart_count;
  e.cap = job.max_resumes;
  e.reason = fault.message;
  e.next_try = not_before;
  journal(e);
}

void Responder::on_sweep(const std::vector<CheckResult>& results, const std::vector<LocalJob>& jobs,
                         const std::optional<StepFailure>& trigger, WallTime now, bool full_pass) {
  auto fault = worst_fault(results);
  if (fault) {
    healthy_passes_ = 0;
    bool new_episode = !faulty_ || fault->code != fault_code_;
    faulty_ = true;
    fault_code_ = fault->code;
    // A fault announced ahead of time (EC2 maintenance, spot): the jobs are signalled to checkpoint,
    // the node is drained at once (no new job lands on a node about to go), and the jobs are requeued
    // when the grace is over.
    const WallTime act_at = fault->checkpoint_first ? now + fault->checkpoint_first->grace : now;
    std::optional<JournalEntry> drain_entry;
    if (new_episode) {
      journal_.fault_history().push_back(now);
      bool held = flapping(now);
      spdlog::warn("node {} is faulty: {}: {} (action {})", node_, fault->code, fault->message, to_string(fault->action));
      JournalEntry drain = entry(ActionKind::drain, fault->code, now);
      drain.reason = drain_reason(*fault, held);
      // A node kept out for an admin is not rebooted back into service behind their back.
      drain.reboot = fault->action == Action::reboot && !held;
      drain_entry = drain;
      if (!fault->checkpoint_first) journal(*drain_entry);  // else after the signals: they go first
    }
    std::vector<LocalJob> targets = jobs;
    if (trigger) targets.push_back({trigger->job_id, trigger->restart_count, trigger->auto_resume, trigger->max_resumes});
    for (const auto& job : targets) {
      if (new_episode && !journal_.requeued(job.job_id, job.restart_count))
        timeline_.record(job.job_id, {now, node_, "fault seen", fault->code + ": " + fault->message});
      // Jobs without the flag are never requeued by us; the drain above still protects the next job.
      if (job.auto_resume && fault->checkpoint_first) queue_signal(job, *fault, now);
      if (job.auto_resume) queue_requeue(job, *fault, now, act_at);
    }
    if (drain_entry && fault->checkpoint_first) journal(*drain_entry);
    return;
  }

  faulty_ = false;
  fault_code_.clear();
  if (trigger && trigger->auto_resume) {
    std::string what = "task " + std::to_string(trigger->task_rank) + " of step " + std::to_string(trigger->step_id) +
                       " failed and node " + node_ + " checked healthy";
    if (policy_.resume_on_any_failure) {
      timeline_.record(trigger->job_id, {now, node_, "application failure", what + "; policy resumes on any failure"});
      CheckResult app;
      app.code = "APP-FAILURE";
      app.message = what;
      queue_requeue({trigger->job_id, trigger->restart_count, true, trigger->max_resumes}, app, now, now);
    } else if (!timeline_.has_event(trigger->job_id, "no fault here")) {
      timeline_.record(trigger->job_id, {now, node_, "no fault here", what + ": nothing to do on this node"});
    }
  }

  auto& own = journal_.own_drain();
  if (own && !own->held && full_pass) {
    ++healthy_passes_;
    if (healthy_passes_ >= policy_.recovery_passes) {
      JournalEntry resume = entry(ActionKind::resume, own->code, now);
      bool queued = std::any_of(journal_.pending().begin(), journal_.pending().end(),
                                [](const JournalEntry& e) { return e.kind == ActionKind::resume; });
      if (!queued) journal(resume);
      healthy_passes_ = 0;
    }
  }
}

void Responder::run_due(WallTime now) {
  // Copy: carrying out an entry changes the journal.
  auto due = journal_.pending();
  for (const auto& e : due) {
    if (e.next_try > now) continue;
    std::expected<bool, std::string> r;
    switch (e.kind) {
      case ActionKind::drain: r = do_drain(e, now); break;
      case ActionKind::requeue: r = do_requeue(e, now); break;
      case ActionKind::resume: r = do_resume(e, now); break;
      case ActionKind::signal: r = do_signal(e, now); break;
      case ActionKind::comment: {
        auto c = slurm_.set_comment(e.job_id, e.reason);
        r = c ? std::expected<bool, std::string>(true) : std::unexpected(c.error());
        break;
      }
    }
    if (r && *r) {
      if (auto c = journal_.complete(e.id); !c) spdlog::error("journal: {}", c.error());
    } else {
      std::string error = r ? "not finished" : r.error();
      spdlog::warn("{} {}{}: will retry: {}", to_string(e.kind), e.job_id ? "job " + std::to_string(e.job_id) : "node ",
                   e.job_id ? "" : e.node, error);
      if (auto c = journal_.retry_later(e.id, error, now); !c) spdlog::error("journal: {}", c.error());
    }
  }
}

std::expected<bool, std::string> Responder::do_drain(const JournalEntry& e, WallTime now) {
  auto info = slurm_.node(e.node);
  if (!info) return std::unexpected(info.error());
  bool held = contains(e.reason, "until an admin resumes it");
  if (info->drained_or_draining()) {
    if (!starts_with(info->reason, kReasonPrefix)) {
      // An admin (or another tool) drained it first: their reason stays, and the node is theirs.
      spdlog::info("node {} is already drained by someone else ({}); leaving it as it is", e.node, info->reason);
      return true;
    }
    bool rebooting = info->reboot_pending();
    if (e.reboot && !rebooting) {
      // Drained by us for a lesser fault, now one whose cure is a reboot.
      if (auto r = slurm_.reboot(e.node, e.reason); r) rebooting = true;
      else spdlog::error("node {}: scontrol reboot failed ({}); it stays drained", e.node, r.error());
    }
    if (info->reason != e.reason && !rebooting) {
      if (auto r = slurm_.set_reason(e.node, e.reason); !r) return std::unexpected(r.error());
    }
    journal_.own_drain() = OwnDrain{e.code, e.reason, now, held, rebooting};
    return true;
  }
  // Never take out more than the allowed share of any partition this node is in.
  for (const auto& partition : info->partitions) {
    auto nodes = slurm_.partition_nodes(partition);
    if (!nodes) return std::unexpected(nodes.error());
    std::size_t drained = 0;
    for (const auto& n : *nodes)
      if (n.name != e.node && n.drained_or_draining()) ++drained;
    auto limit = static_cast<std::size_t>(std::floor(policy_.max_drained_share * static_cast<double>(nodes->size())));
    if (drained + 1 > limit) {
      withheld_ = "drain of " + e.node + " withheld: " + std::to_string(drained) + " of " +
                  std::to_string(nodes->size()) + " nodes of partition " + partition +
                  " are drained already (max_drained_share " + std::to_string(policy_.max_drained_share) + ")";
      spdlog::error("{}; fault: {}", withheld_, e.reason);
      return true;
    }
  }
  bool rebooting = false;
  if (e.reboot) {
    // The cure is a reboot: Slurm drains the node, reboots it once the requeued jobs have left, and
    // resumes it. Where it cannot (no RebootProgram), the node is drained and the reason says why.
    if (auto r = slurm_.reboot(e.node, e.reason); r) {
      rebooting = true;
      spdlog::warn("node {}: reboot requested (ASAP, then resume): {}", e.node, e.reason);
    } else {
      spdlog::error("node {}: scontrol reboot failed ({}); draining it instead", e.node, r.error());
    }
  }
  if (!rebooting) {
    std::string reason = e.reboot ? e.reason + " (reboot needed)" : e.reason;
    if (reason.size() > 240) reason = reason.substr(0, 237) + "...";
    if (auto r = slurm_.drain(e.node, reason); !r) return std::unexpected(r.error());
    spdlog::warn("drained node {}: {}", e.node, reason);
  }
  withheld_.clear();
  journal_.own_drain() = OwnDrain{e.code, e.reason, now, held, rebooting};
  return true;
}

std::expected<bool, std::string> Responder::do_requeue(const JournalEntry& e, WallTime now) {
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (contains(job.error(), "Invalid job id")) {
      spdlog::info("job {} is gone; nothing to requeue", e.job_id);
      return true;
    }
    return std::unexpected(job.error());
  }
  if (job->restart_count > e.restart_count) {
    // Another node's healthd (or this one, before a crash) requeued this attempt already.
    journal_.mark_requeued(e.job_id, e.restart_count);
    timeline_.record(e.job_id, {now, node_, "requeued elsewhere", "attempt " + std::to_string(e.restart_count + 1) +
                                                                      " was already requeued"});
    followed_.push_back({e.job_id, e.restart_count + 1, now, now});
    return true;
  }
  // The user may lower the admin's cap for their job, never raise it.
  const std::uint32_t cap = std::min(policy_.max_resumes, e.cap.value_or(policy_.max_resumes));
  if (e.restart_count >= cap) {
    std::string why = "auto-resume: not resumed: the cap of " + std::to_string(cap) +
                      " resumes is reached (last failure: " + e.code + " on " + node_ + ")";
    spdlog::error("job {}: {}", e.job_id, why);
    if (auto r = slurm_.set_comment(e.job_id, why); !r) return std::unexpected(r.error());
    // The job ends as it would have without auto-resume. A step that failed has ended it already; a
    // job hung on the faulty node would hold its allocation forever, so it is ended here.
    if (job->state == "RUNNING") {
      if (auto r = slurm_.cancel(e.job_id); !r) return std::unexpected(r.error());
      why += "; the job, still running on a faulty node, is cancelled";
    }
    journal_.mark_requeued(e.job_id, e.restart_count);  // decided: never again for this attempt
    timeline_.record(e.job_id, {now, node_, "resume cap reached", why});
    return true;
  }
  if (job->state == "PENDING") return true;  // not running (held, or requeued by Slurm itself)

  auto r = slurm_.requeue(e.job_id);
  if (!r) {
    // slurmctld refuses a second requeue of the same job: whoever raced us won. Check who.
    auto again = slurm_.job(e.job_id);
    if (again && again->restart_count > e.restart_count) {
      journal_.mark_requeued(e.job_id, e.restart_count);
      timeline_.record(e.job_id, {now, node_, "requeued elsewhere", r.error()});
      followed_.push_back({e.job_id, e.restart_count + 1, now, now});
      return true;
    }
    return std::unexpected(r.error());
  }
  journal_.mark_requeued(e.job_id, e.restart_count);
  timeline_.record(e.job_id, {std::chrono::system_clock::now(), node_, "requeued",
                              "attempt " + std::to_string(e.restart_count + 2) + " after " + e.code + " on " + node_});
  std::string comment = format_attempt_comment({e.restart_count + 1, e.code, node_, e.reason});
  if (auto c = slurm_.set_comment(e.job_id, comment); !c) spdlog::warn("job {}: comment: {}", e.job_id, c.error());
  release_hold(e.job_id);
  followed_.push_back({e.job_id, e.restart_count + 1, now, now});
  return true;
}

void Responder::release_hold(std::uint32_t job_id) {
  // Slurm holds a requeued job (Reason=BeginTime) for minutes. starttime=now lifts it, but only once the
  // job has left COMPLETING: issued earlier it is silently overridden. So wait for PENDING first.
  for (int i = 0; i < 200; ++i) {
    auto job = slurm_.job(job_id);
    if (!job) break;
    if (job->state == "PENDING") {
      if (auto r = slurm_.release_hold(job_id); !r) {
        spdlog::warn("job {}: releasing the requeue hold: {}", job_id, r.error());
        return;
      }
      timeline_.record(job_id, {std::chrono::system_clock::now(), node_, "hold released", "starttime=now+1"});
      return;
    }
    if (job->state != "COMPLETING" && job->state != "RUNNING") return;  // running again or gone
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  spdlog::warn("job {}: did not reach PENDING in time; Slurm's requeue hold stays", job_id);
}

void Responder::follow_requeued(WallTime now) {
  std::erase_if(followed_, [&](Followed& f) {
    if (now < f.next_look) return false;
    auto job = slurm_.job(f.job_id);
    if (!job) {
      // Slurm not answering: look again later rather than stall the engine on every pass.
      f.next_look = now + std::chrono::seconds(5);
      return now - f.since > std::chrono::minutes(10);
    }
    if (job->restart_count >= f.restart_count && job->state != "PENDING") {
      auto secs = std::chrono::duration<double>(std::chrono::system_clock::now() - f.since).count();
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s on %s, %.1f s after the requeue",
                    job->state == "RUNNING" ? "running" : ("started and now " + job->state).c_str(),
                    job->node_list.c_str(), secs);
      timeline_.record(f.job_id, {std::chrono::system_clock::now(), node_, "running again", buf});
      return true;
    }
    return now - f.since > std::chrono::minutes(10);
  });
}

std::expected<bool, std::string> Responder::do_resume(const JournalEntry& e, WallTime now) {
  auto info = slurm_.node(e.node);
  if (!info) return std::unexpected(info.error());
  auto& own = journal_.own_drain();
  if (!info->drained_or_draining() || !starts_with(info->reason, kReasonPrefix)) {
    // Resumed by an admin, or re-drained with their own reason: not ours any more.
    own.reset();
    return true;
  }
  if (!own || own->held) return true;
  // A reboot is on its way: Slurm resumes the node after it (nextstate=RESUME). Resuming it now would
  // cancel the reboot that cures the fault.
  if (own->reboot && info->reboot_pending()) return true;
  if (auto r = slurm_.resume(e.node); !r) return std::unexpected(r.error());
  spdlog::info("node {} passed {} checks in a row: resumed (was: {})", e.node, policy_.recovery_passes, own->reason);
  own.reset();
  (void)now;
  return true;
}

std::expected<bool, std::string> Responder::do_signal(const JournalEntry& e, WallTime now) {
  if (journal_.signalled(e.job_id, e.restart_count)) return true;
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (contains(job.error(), "Invalid job id")) return true;  // gone: nothing to checkpoint
    return std::unexpected(job.error());
  }
  // Requeued or ended meanwhile: the attempt that was to checkpoint is over.
  if (job->restart_count != e.restart_count || job->state != "RUNNING") return true;
  if (auto r = slurm_.signal_job(e.job_id, e.reason); !r) return std::unexpected(r.error());
  // Marked once sent: a crash before the journal is saved sends it again (at least once, never lost).
  journal_.mark_signalled(e.job_id, e.restart_count);
  spdlog::warn("job {}: SIG{} sent to checkpoint now ({} on {})", e.job_id, e.reason, e.code, node_);
  timeline_.record(e.job_id, {now, node_, "checkpoint signal",
                              "SIG" + e.reason + " to the batch script and every step: " + e.code + " on " + node_});
  return true;
}

nlohmann::json Responder::status() const {
  nlohmann::json j = {{"faulty", faulty_}, {"fault_code", fault_code_}, {"healthy_passes", healthy_passes_},
                      {"pending_actions", journal_.pending().size()}};
  if (!withheld_.empty()) j["drain_withheld"] = withheld_;
  return j;
}

}  // namespace ar::healthd
