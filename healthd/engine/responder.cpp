#include "responder.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include <spdlog/spdlog.h>

#include "auto_resume/job_comment.hpp"
#include "policy/cure_plan.hpp"
#include "policy/fault_policy.hpp"
#include "policy/return_policy.hpp"
#include "policy/suspect_policy.hpp"
#include "state/atomic_file.hpp"
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

policy::JobAtFault Responder::at_fault(std::uint32_t job_id, std::uint32_t restart_count, bool auto_resume,
                                      std::optional<std::uint32_t> max_resumes, std::vector<std::uint32_t> steps) const {
  policy::JobAtFault j{job_id, restart_count, auto_resume, max_resumes, std::move(steps), {}};
  j.journalled.requeued = journal_.requeued(job_id, restart_count);
  j.journalled.requeue_pending = journal_.has_pending(Action::requeue, job_id, restart_count);
  j.journalled.signalled = journal_.signalled(job_id, restart_count);
  j.journalled.signal_pending = journal_.has_pending(Action::signal, job_id, restart_count);
  return j;
}

void Responder::hasten(const policy::JobAtFault& job, WallTime by) {
  if (auto r = journal_.hasten(Action::requeue, job.job_id, job.restart_count, by); !r) spdlog::error("journal: {}", r.error());
}

void Responder::queue_requeue(const policy::JobAtFault& job, const std::string& code, const std::string& message,
                              WallTime now) {
  auto r = policy::requeue_for(job, code, message, now, policy_.report_only, node_, now);
  if (r.entry) journal(std::move(*r.entry));
  if (r.hasten) hasten(job, *r.hasten);
}

std::vector<StallEvent> Responder::poll_stalls(const std::vector<LocalJob>& jobs, const std::vector<CheckResult>& results,
                                               WallTime now, bool full_pass) {
  if (!full_pass) return {};
  std::vector<WatchedJob> watched;
  std::vector<LocalTask> tasks;
  bool per_rank = false;
  for (const auto& j : jobs) {
    if (!j.auto_resume || !j.heartbeat) continue;
    const bool judges_ranks = j.heartbeat->per_rank && !j.tasks.empty();
    if (!j.batch_here && !judges_ranks) continue;
    watched.push_back({j.job_id, j.restart_count, j.max_resumes, *j.heartbeat, j.uid, j.batch_here});
    if (judges_ranks) tasks.insert(tasks.end(), j.tasks.begin(), j.tasks.end());
    per_rank = per_rank || j.heartbeat->per_rank;
  }
  tasks_.look(tasks, stall_clock_());
  // Long enough for every other node of the job to have had a full sweep (and acted on a fault it
  // found), and for a beat only a little late to call the stall off. With per-rank heartbeats, one
  // interval more: every node running ranks notes the stall at its own next sweep, then writes what
  // it found in the job's admin comment, which the acting node reads.
  const auto settle = policy_.check_interval * (per_rank ? 2 : 1) + policy_.check_deadline;
  std::vector<StallEvent> confirmed;
  for (auto& e : stall_watch_.poll(watched, stall_clock_(), settle)) {
    const auto job = std::find_if(jobs.begin(), jobs.end(), [&](const LocalJob& j) { return j.job_id == e.job_id; });
    switch (e.kind) {
      case StallEvent::Kind::stalled:
        spdlog::warn("job {}: {}", e.job_id, e.message);
        if (job->batch_here)
          timeline_.record(e.job_id, {now, node_, "stall", e.message + "; acted on in " + std::to_string(settle.count()) +
                                                           " s unless it moves or a node of the job is found faulty"});
        if (job->heartbeat->per_rank && !job->tasks.empty()) judge_own_ranks(e, *job, results, now);
        break;
      case StallEvent::Kind::moving_again: timeline_.record(e.job_id, {now, node_, "moving again", e.message}); break;
      case StallEvent::Kind::never_seen:
        spdlog::warn("job {}: {}", e.job_id, e.message);
        timeline_.record(e.job_id, {now, node_, "heartbeat not found", e.message});
        break;
      case StallEvent::Kind::confirmed: confirmed.push_back(std::move(e)); break;
    }
  }
  watch_stragglers(jobs, results, now);
  return confirmed;
}

void Responder::judge_own_ranks(const StallEvent& stall, const LocalJob& job, const std::vector<CheckResult>& results,
                                WallTime now) {
  const auto stall_s = std::chrono::seconds(job.heartbeat->stall_s);
  // The window ends now and lies inside the stall: what the tasks did since the job stopped moving.
  const auto window = std::clamp(stall_s / 2, std::chrono::seconds(1), std::chrono::seconds(120));
  std::vector<GpuActivity> gpus;
  for (const auto& r : results) gpus.insert(gpus.end(), r.gpu_activity.begin(), r.gpu_activity.end());
  auto evidence = judge_ranks(stall.ranks, tasks_.activity(job.tasks, window), stall_s, gpus);
  std::size_t faulty = 0;
  for (const auto& r : results) faulty += r.status == Status::fault ? 1 : 0;
  evidence.items.push_back(faulty == 0 ? "checks pass" : std::to_string(faulty) + " check(s) faulty");
  const std::string text = evidence.text();
  spdlog::warn("job {}: stall evidence on {}: {}{}", job.job_id, node_, text,
               evidence.points_here ? "" : " (nothing points here)");
  timeline_.record(job.job_id, {now, node_, evidence.points_here ? "stall evidence: points here" : "stall evidence: nothing here",
                                fault_message_text(text)});
  if (!evidence.points_here) return;
  // Said where the acting node reads it: the job's admin comment (root's field, written by healthd).
  JournalEntry e = due_entry(Action::annotate, node_, kStallEvidence, now);
  e.job_id = job.job_id;
  e.restart_count = job.restart_count;
  e.reason = format_evidence_line({job.restart_count + 1, node_, text});
  journal(std::move(e));
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
  // The message names the user's heartbeat path: bounded like a fault's.
  queue_requeue(at_fault(stall.job_id, stall.restart_count, true, stall.max_resumes, {}), kStall,
                fault_message_text(stall.message), now);
}

void Responder::on_fault(CheckResult fault, const std::vector<LocalJob>& jobs, const std::optional<StepFailure>& trigger,
                         WallTime now) {
  healthy_passes_ = 0;
  last_healthy_pass_.reset();
  policy::FaultFacts facts{.fault = std::move(fault),
                           .episode = {faulty_, fault_code_},
                           .jobs = {},
                           .fault_history = journal_.fault_history(),
                           .node = node_,
                           .now = now};
  for (const auto& j : jobs) facts.jobs.push_back(at_fault(j.job_id, j.restart_count, j.auto_resume, j.max_resumes, j.auto_resume_steps));
  if (trigger) {
    std::vector<std::uint32_t> steps;
    if (trigger->auto_resume && proto::is_user_step(trigger->step_id)) steps.push_back(trigger->step_id);
    facts.jobs.push_back(at_fault(trigger->job_id, trigger->restart_count, trigger->auto_resume, trigger->max_resumes, steps));
  }
  const auto answer = policy::judge_fault(facts, policy_);
  const auto& f = facts.fault;
  faulty_ = true;
  fault_code_ = f.code;
  if (answer.new_episode) {
    journal_.fault_history() = answer.fault_history;
    tell_new_episode(f, now);
  }
  for (const auto& [job_id, event] : answer.notes) timeline_.record(job_id, event);
  for (const auto& e : answer.entries) {
    if (e.kind == Action::drain && e.cure && !e.cure->chain.empty())
      spdlog::info("node {}: cure of {}: {}", node_, f.code, chain_text(e.cure->chain));
    journal(e);
  }
  for (const auto& [job, by] : answer.hasten) hasten(job, by);
  // The fault still there after a cure step: the chain goes on.
  actions_.fault_seen(f.code, f.at, now);
}

void Responder::tell_new_episode(const CheckResult& fault, WallTime now) {
  spdlog::warn("node {} is faulty: {}: {} (action {}{})", node_, fault.code, fault.message, to_string(fault.action),
               policy_.report_only ? ", report only" : "");
  if (notices_ == nullptr) return;
  Notice n;
  n.kind = NoticeKind::incident;
  n.at = now;
  n.node = node_;
  n.code = fault.code;
  n.message = fault.message;
  n.action = policy_.report_only ? "report only" : to_string(fault.action);
  notices_->notify(n);
}

void Responder::on_sweep(const std::vector<CheckResult>& results, const std::vector<LocalJob>& jobs,
                         const std::optional<StepFailure>& trigger, WallTime now, bool full_pass) {
  actions_.set_jobs_here(jobs.size());
  ask_sweep_rules(results, now, full_pass);
  const auto stalls = poll_stalls(jobs, results, now, full_pass);
  if (auto fault = worst_fault(results)) return on_fault(std::move(*fault), jobs, trigger, now);

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
      queue_requeue(at_fault(trigger->job_id, trigger->restart_count, true, trigger->max_resumes, {}), kAppFailure, what, now);
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

std::size_t Responder::suspicions(WallTime now) const {
  return policy::judge_lemon(journal_.suspicions(), policy_, now).counted;
}

nlohmann::json Responder::status() const {
  nlohmann::json j = {{"faulty", faulty_}, {"fault_code", fault_code_}, {"healthy_passes", healthy_passes_},
                      {"report_only", policy_.report_only},
                      {"pending_actions", journal_.pending().size()}, {"journal_written", journal_.durable()}};
  if (const auto lemon = policy::judge_lemon(journal_.suspicions(), policy_, std::chrono::system_clock::now()); lemon.counted > 0) {
    const auto& last = journal_.suspicions().back();
    j["suspicions"] = {{"in_window", lemon.counted},
                       {"lemon_at", policy_.lemon_suspicions},
                       {"summary", lemon.why},
                       {"last", {{"at_ms", to_epoch_ms(last.at)}, {"why", last.why}}}};
  }
  // No job ids: every user sees the status (a job's own story is in healthctl explain).
  if (!straggling_.empty()) {
    std::size_t excluding = 0;
    for (const auto& [job, s] : straggling_) excluding += s.requeue_asked ? 1 : 0;
    j["stragglers"] = {{"jobs", straggling_.size()},
                       {"share", policy_.straggler_share},
                       {"action", policy_.straggler_action == StragglerAction::exclude ? "exclude" : "report"},
                       {"requeued_without", excluding}};
  }
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
