#include "responder.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include <spdlog/spdlog.h>

#include "auto_resume/job_comment.hpp"
#include "policy/cure_plan.hpp"
#include "policy/return_policy.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {

// The worst fault among results: fault status only (a broken check says nothing about the node).
// Its code and message are bounded here, once, for everything that carries them out of the daemon
// (text/text.hpp fault_code_text).
std::optional<CheckResult> worst_fault(const std::vector<CheckResult>& results) {
  std::optional<CheckResult> worst;
  for (const auto& r : results)
    if (r.status == Status::fault && takes_node_out(r.action) && (!worst || severity(r.action) > severity(worst->action))) worst = r;
  if (worst) {
    worst->code = fault_code_text(worst->code);
    worst->message = fault_message_text(worst->message);
  }
  return worst;
}

}  // namespace

Responder::Responder(std::string node, PolicyConfig policy, SlurmClient& slurm, Journal& journal, Timeline& timeline,
                     HookRunner run_hook)
    : node_(node),
      policy_(policy),
      journal_(journal),
      timeline_(timeline),
      actions_(std::move(node), std::move(policy), slurm, journal, timeline, std::move(run_hook)) {
  // A restart in the middle of an episode is not a new one: the fault healthd drained for (and that an
  // admin may have overridden since) is not drained for again, nor counted again towards flapping.
  if (const auto& own = journal_.own_drain()) {
    faulty_ = true;
    fault_code_ = own->code;
  }
  for (const auto& x : SlurmActions::executors())
    if (x.sweep_rule != nullptr) sweep_rules_.push_back(x.sweep_rule());
}

void Responder::journal(JournalEntry e) {
  if (policy_.report_only) return report(e);
  if (auto r = journal_.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
}

void Responder::report(const JournalEntry& e) {
  const std::string key =
      to_string(e.kind) + "/" + e.code + "/" + std::to_string(e.job_id) + "/" + std::to_string(e.restart_count);
  if (!reported_.insert(key).second) return;
  const std::string what = e.kind == Action::drain && e.reboot ? "reboot" : to_string(e.kind);
  const std::string target = e.job_id != 0 ? "job " + std::to_string(e.job_id) : "node " + e.node;
  const std::string detail = e.kind == Action::signal ? "SIG" + (e.reason.empty() ? std::string("<the job's own>") : e.reason)
                                                     : e.reason;
  spdlog::warn("report only: would {} {} ({}{}{}); nothing done", what, target, e.code, detail.empty() ? "" : ": ", detail);
  if (e.job_id != 0)
    timeline_.record(e.job_id, {e.created, node_, "report only", "would " + what + " (" + e.code + "); nothing done"});
}

std::string Responder::drain_reason(const CheckResult& fault, bool held) const {
  std::string reason = std::string(kReasonPrefix) + " " + fault.code + ": " + fault.message;
  if (held)
    reason += " (" + std::to_string(policy_.flap_max_faults) + " faults within " +
              std::to_string(policy_.flap_window.count()) + " s: kept out until an admin resumes it)";
  return short_reason(std::move(reason));
}

bool Responder::flapping(WallTime now) {
  auto& history = journal_.fault_history();
  std::erase_if(history, [&](WallTime t) { return now - t > policy_.flap_window; });
  return history.size() >= policy_.flap_max_faults;
}

void Responder::queue_signal(const LocalJob& job, const CheckResult& fault, WallTime now) {
  if (journal_.signalled(job.job_id, job.restart_count) ||
      journal_.has_pending(Action::signal, job.job_id, job.restart_count))
    return;
  JournalEntry e = due_entry(Action::signal, node_, fault.code, now);
  e.job_id = job.job_id;
  e.restart_count = job.restart_count;
  e.reason = fault.checkpoint_first->signal;
  journal(e);
}

void Responder::queue_requeue(const LocalJob& job, const CheckResult& fault, WallTime now, WallTime not_before) {
  if (journal_.requeued(job.job_id, job.restart_count)) return;
  if (journal_.has_pending(Action::requeue, job.job_id, job.restart_count)) {
    if (policy_.report_only) return report(due_entry(Action::requeue, node_, fault.code, now));
    // Waiting out a checkpoint grace, and now a fault that cannot wait: requeue sooner.
    if (auto r = journal_.hasten(Action::requeue, job.job_id, job.restart_count, not_before); !r)
      spdlog::error("journal: {}", r.error());
    return;
  }
  JournalEntry e = due_entry(Action::requeue, node_, fault.code, now);
  e.job_id = job.job_id;
  e.restart_count = job.restart_count;
  e.cap = job.max_resumes;
  e.reason = fault.message;
  // One auto-resume srun step here: it may be run again on the job's other nodes (SlurmActions
  // decides, with slurmctld's view of the job). Several: no telling which to re-run; a requeue.
  if (job.auto_resume_steps.size() == 1 && fault.code != kStall && fault.code != kAppFailure)
    e.rerun_step = job.auto_resume_steps.front();
  e.next_try = not_before;
  journal(e);
}

std::vector<StallEvent> Responder::poll_stalls(const std::vector<LocalJob>& jobs, WallTime now, bool full_pass) {
  if (!full_pass) return {};
  std::vector<WatchedJob> watched;
  for (const auto& j : jobs)
    if (j.auto_resume && j.heartbeat && j.batch_here) watched.push_back({j.job_id, j.restart_count, j.max_resumes, *j.heartbeat, j.uid});
  // Long enough for every other node of the job to have had a full sweep (and acted on a fault it
  // found), and for a beat only a little late to call the stall off.
  const auto settle = policy_.check_interval + policy_.check_deadline;
  std::vector<StallEvent> confirmed;
  for (auto& e : stall_watch_.poll(watched, stall_clock_(), settle)) {
    switch (e.kind) {
      case StallEvent::Kind::stalled:
        spdlog::warn("job {}: {}", e.job_id, e.message);
        timeline_.record(e.job_id, {now, node_, "stall", e.message + "; acted on in " + std::to_string(settle.count()) +
                                                         " s unless it moves or a node of the job is found faulty"});
        break;
      case StallEvent::Kind::moving_again: timeline_.record(e.job_id, {now, node_, "moving again", e.message}); break;
      case StallEvent::Kind::never_seen:
        spdlog::warn("job {}: {}", e.job_id, e.message);
        timeline_.record(e.job_id, {now, node_, "heartbeat not found", e.message});
        break;
      case StallEvent::Kind::confirmed: confirmed.push_back(std::move(e)); break;
    }
  }
  return confirmed;
}

void Responder::ask_sweep_rules(const std::vector<CheckResult>& results, WallTime now, bool full_pass) {
  const policy::SweepFacts sweep{results, full_pass, now, node_};
  for (auto& rule : sweep_rules_)
    for (auto& e : rule->judge(sweep)) journal(std::move(e));
}

void Responder::act_on_stall(const StallEvent& stall, WallTime now) {
  if (policy_.stall_action == StallAction::warn) {
    spdlog::warn("job {}: {}; [policy] stall_action = \"warn\": nothing done", stall.job_id, stall.message);
    timeline_.record(stall.job_id, {now, node_, "stall: warn only", "[policy] stall_action = \"warn\": nothing done"});
    return;
  }
  CheckResult stalled;
  stalled.code = kStall;
  stalled.message = fault_message_text(stall.message);  // it names the user's heartbeat path
  queue_requeue({stall.job_id, stall.restart_count, true, stall.max_resumes, std::nullopt, true, {}}, stalled, now, now);
}

void Responder::on_sweep(const std::vector<CheckResult>& results, const std::vector<LocalJob>& jobs,
                         const std::optional<StepFailure>& trigger, WallTime now, bool full_pass) {
  actions_.set_jobs_here(jobs.size());
  ask_sweep_rules(results, now, full_pass);
  const auto stalls = poll_stalls(jobs, now, full_pass);
  auto fault = worst_fault(results);
  if (fault) {
    healthy_passes_ = 0;
    last_healthy_pass_.reset();
    bool new_episode = !faulty_ || fault->code != fault_code_;
    faulty_ = true;
    fault_code_ = fault->code;
    // A fault announced ahead of time (EC2 maintenance, spot): the jobs are signalled to checkpoint,
    // the node is drained at once (no new job lands on a node about to go), and the jobs are requeued
    // when the grace is over.
    const WallTime act_at = fault->checkpoint_first ? now + fault->checkpoint_first->grace : now;
    std::optional<JournalEntry> drain_entry;
    if (new_episode) {
      // A fault only reported is not counted towards flapping: it would hold the first real drain.
      if (!policy_.report_only) journal_.fault_history().push_back(now);
      bool held = flapping(now);
      spdlog::warn("node {} is faulty: {}: {} (action {}{})", node_, fault->code, fault->message, to_string(fault->action),
                   policy_.report_only ? ", report only" : "");
      if (notices_ != nullptr) {
        Notice n;
        n.kind = NoticeKind::incident;
        n.at = now;
        n.node = node_;
        n.code = fault->code;
        n.message = fault->message;
        n.action = policy_.report_only ? "report only" : to_string(fault->action);
        notices_->notify(n);
      }
      // The jobs the fault ends here: their timelines tell each cure step.
      std::vector<std::uint32_t> ended;
      for (const auto& job : jobs)
        if (job.auto_resume) ended.push_back(job.job_id);
      if (trigger && trigger->auto_resume) ended.push_back(trigger->job_id);
      JournalEntry drain = policy::episode_drain(policy_.cure, *fault, held, drain_reason(*fault, held), ended, node_, now);
      if (!drain.cure->chain.empty())
        spdlog::info("node {}: cure of {}: {}", node_, fault->code, chain_text(drain.cure->chain));
      drain_entry = drain;
      if (!fault->checkpoint_first) journal(*drain_entry);  // else after the signals: they go first
    }
    std::vector<LocalJob> targets = jobs;
    if (trigger) {
      std::vector<std::uint32_t> steps;
      if (trigger->auto_resume && proto::is_user_step(trigger->step_id)) steps.push_back(trigger->step_id);
      targets.push_back({trigger->job_id, trigger->restart_count, trigger->auto_resume, trigger->max_resumes, std::nullopt,
                         false, steps});
    }
    for (const auto& job : targets) {
      if (new_episode && !journal_.requeued(job.job_id, job.restart_count))
        timeline_.record(job.job_id, {now, node_, "fault seen", fault->code + ": " + fault->message});
      // Jobs without the flag are never requeued by us; the drain above still protects the next job.
      // No checkpoint signal set: none is sent (a bash or Python job without a handler dies of
      // SIGUSR1); the job still has the grace before it is requeued.
      if (job.auto_resume && fault->checkpoint_first && !fault->checkpoint_first->signal.empty())
        queue_signal(job, *fault, now);
      else if (job.auto_resume && fault->checkpoint_first && new_episode)
        timeline_.record(job.job_id, {now, node_, "no checkpoint signal",
                                      "[checks.ec2] checkpoint_signal is not set; requeued after the grace"});
      if (job.auto_resume) queue_requeue(job, *fault, now, act_at);
    }
    if (drain_entry && fault->checkpoint_first) journal(*drain_entry);
    // The fault still there after a cure step: the chain goes on.
    actions_.fault_seen(fault->code, fault->at, now);
    return;
  }

  if (faulty_) reported_.clear();  // the episode is over: the next one is said again
  for (const auto& s : stalls) act_on_stall(s, now);
  faulty_ = false;
  fault_code_.clear();
  actions_.clear_override();
  if (trigger && trigger->auto_resume) {
    std::string what = "task " + std::to_string(trigger->task_rank) + " of step " + proto::step_name(trigger->step_id) +
                       " failed and node " + node_ + " checked healthy";
    if (policy_.resume_on_any_failure) {
      timeline_.record(trigger->job_id, {now, node_, "application failure", what + "; policy resumes on any failure"});
      CheckResult app;
      app.code = kAppFailure;
      app.message = what;
      queue_requeue({trigger->job_id, trigger->restart_count, true, trigger->max_resumes, std::nullopt, false, {}}, app, now, now);
    } else if (!timeline_.has_event(trigger->job_id, "no fault here")) {
      timeline_.record(trigger->job_id, {now, node_, "no fault here", what + ": nothing to do on this node"});
    }
  }

  auto& own = journal_.own_drain();
  if (own) actions_.healthy_seen(now);
  const auto& pending = journal_.pending();
  policy::HealthyPass pass;
  pass.own_drain = own.has_value();
  pass.held = own && own->held;
  pass.full_pass = full_pass;
  pass.spaced = !last_healthy_pass_ || now - *last_healthy_pass_ >= policy_.check_interval / 2;
  pass.cure_under_way = own && actions_.cure_under_way();
  pass.passes_before = healthy_passes_;
  pass.recovery_passes = policy_.recovery_passes;
  pass.deep_checked = own && own->cure && own->cure->deep_checked;
  pass.deep_check_first = !policy_.cure.deep_check.empty() && policy_.cure.deep_check_before_return;
  pass.jobs_moved = !actions_.following() &&
                    std::none_of(pending.begin(), pending.end(), [](const JournalEntry& e) { return e.kind == Action::requeue; });
  pass.return_pending = std::any_of(pending.begin(), pending.end(), [](const JournalEntry& e) {
    return e.kind == Action::resume || e.kind == Action::deep_check;
  });
  const auto d = policy::when_healthy(pass);
  if (d.counted) last_healthy_pass_ = now;
  healthy_passes_ = d.passes;
  if (d.journal) {
    JournalEntry back = due_entry(*d.journal, node_, own->code, now);
    back.reason = own->reason;
    journal(back);
  }
}

void Responder::admin_drain(const std::string& reason, std::uint32_t uid, std::uint64_t request, WallTime now) {
  JournalEntry e = due_entry(Action::drain, node_, "ADMIN", now);
  e.reason = short_reason(std::string(kReasonPrefix) + " ADMIN: " + reason);
  e.held = true;
  e.admin = true;
  e.by_uid = uid;
  e.request = request;
  spdlog::warn("node {}: drain asked by an admin through healthctl: {}", node_, reason);
  if (auto r = journal_.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
}

void Responder::admin_resume(bool force, std::uint32_t uid, std::uint64_t request, WallTime now) {
  JournalEntry e = due_entry(Action::resume, node_, "ADMIN", now);
  e.admin = true;
  e.by_uid = uid;
  e.request = request;
  e.force = force;
  spdlog::warn("node {}: resume asked by an admin through healthctl{}", node_, force ? " (--force)" : "");
  if (auto r = journal_.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
}

void Responder::admin_clear(const std::string& code, std::size_t forgotten, std::size_t busy, std::uint32_t uid,
                            std::uint64_t request, WallTime now) {
  if (faulty_ && fault_code_ == code) {
    faulty_ = false;
    fault_code_.clear();
    reported_.clear();
  }
  if (notices_ != nullptr) {
    Notice n;
    n.kind = NoticeKind::admin;
    n.at = now;
    n.node = node_;
    n.code = code;
    n.message = "fault " + code + " cleared by an admin through healthctl (" + std::to_string(forgotten) +
                " check(s) forgot it; one still found is a new fault" +
                (busy > 0 ? "; " + std::to_string(busy) + " check(s) hung in a run were not asked" : std::string()) + ")";
    n.action = "clear";
    n.uid = uid;
    n.request = request;
    notices_->notify(n);
  }
}

nlohmann::json Responder::status() const {
  nlohmann::json j = {{"faulty", faulty_}, {"fault_code", fault_code_}, {"healthy_passes", healthy_passes_},
                      {"report_only", policy_.report_only},
                      {"pending_actions", journal_.pending().size()}, {"journal_written", journal_.durable()}};
  if (const auto& own = journal_.own_drain())
    j["own_drain"] = {{"code", own->code}, {"reason", own->reason}, {"held", own->held}, {"reboot", own->reboot}};
  if (const auto& own = journal_.own_drain(); own && own->cure) {
    const auto& c = *own->cure;
    j["own_drain"]["cure"] = nlohmann::json{{"chain", chain_text(c.chain)},
                                            {"step", c.at_end() ? std::string("none") : to_string(c.current())},
                                            {"step_no", c.step + 1},
                                            {"steps", c.chain.size()},
                                            {"phase", to_string(c.phase)},
                                            {"last", c.last},
                                            {"deep_checked", c.deep_checked}};
  }
  actions_.add_status(j);
  return j;
}

}  // namespace ar::healthd
