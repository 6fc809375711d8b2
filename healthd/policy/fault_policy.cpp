#include "fault_policy.hpp"

#include <algorithm>
#include <set>

#include "policy/cure_plan.hpp"
#include "text/text.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd::policy {
namespace {

// The new episodes within the flap window, this one counted unless it is only reported (a fault
// only reported would hold the first real drain).
std::vector<WallTime> counted_history(std::vector<WallTime> history, const PolicyConfig& policy, WallTime now) {
  if (!policy.report_only) history.push_back(now);
  std::erase_if(history, [&](WallTime t) { return now - t > policy.flap_window; });
  return history;
}

void add_requeue(FaultAnswer& answer, const JobAtFault& job, const FaultFacts& f, const PolicyConfig& policy,
                 WallTime act_at) {
  auto r = requeue_for(job, f.fault.code, f.fault.message, act_at, policy.report_only, f.node, f.now);
  if (r.entry) answer.entries.push_back(std::move(*r.entry));
  if (r.hasten) answer.hasten.emplace_back(job, *r.hasten);
}

// One job's part: its timeline told of a new episode, its checkpoint signal, its requeue. Jobs
// without the flag are never requeued by us; the drain still protects the next job. No checkpoint
// signal set: none is sent (a bash or Python job without a handler dies of SIGUSR1); the job still
// has the grace before it is requeued.
void answer_for_job(FaultAnswer& answer, const JobAtFault& job, const FaultFacts& f, const PolicyConfig& policy,
                    bool first_told) {
  const auto& cp = f.fault.checkpoint_first;
  const WallTime act_at = cp ? f.now + cp->grace : f.now;
  if (answer.new_episode && first_told && !job.journalled.requeued)
    answer.notes.push_back({job.job_id, {f.now, f.node, "fault seen", f.fault.code + ": " + f.fault.message}});
  if (!job.auto_resume) return;
  if (cp && !cp->signal.empty()) {
    if (!job.journalled.signalled && !job.journalled.signal_pending) {
      JournalEntry e = due_entry(Action::signal, f.node, f.fault.code, f.now);
      e.job_id = job.job_id;
      e.restart_count = job.restart_count;
      e.reason = cp->signal;
      answer.entries.push_back(std::move(e));
    }
  } else if (cp && answer.new_episode) {
    answer.notes.push_back({job.job_id, {f.now, f.node, "no checkpoint signal",
                                         "[checks.ec2] checkpoint_signal is not set; requeued after the grace"}});
  }
  add_requeue(answer, job, f, policy, act_at);
}

}  // namespace

std::string drain_reason(const CheckResult& fault, bool held, const PolicyConfig& policy) {
  std::string reason = std::string(kReasonPrefix) + " " + fault.code + ": " + fault.message;
  if (held)
    reason += " (" + std::to_string(policy.flap_max_faults) + " faults within " +
              std::to_string(policy.flap_window.count()) + " s: kept out until an admin resumes it)";
  return short_reason(std::move(reason));
}

RequeueAnswer requeue_for(const JobAtFault& job, const std::string& code, const std::string& message,
                          WallTime not_before, bool report_only, const std::string& node, WallTime now) {
  if (job.journalled.requeued) return {};
  if (job.journalled.requeue_pending) {
    // Waiting out a checkpoint grace, and now a fault that cannot wait: requeue sooner.
    if (!report_only) return {.entry = std::nullopt, .hasten = not_before};
    JournalEntry said = due_entry(Action::requeue, node, code, now);  // for report-only to say, once
    said.job_id = job.job_id;
    said.restart_count = job.restart_count;
    return {.entry = std::move(said), .hasten = std::nullopt};
  }
  JournalEntry e = due_entry(Action::requeue, node, code, now);
  e.job_id = job.job_id;
  e.restart_count = job.restart_count;
  e.cap = job.max_resumes;
  e.reason = message;
  // Several auto-resume steps here: no telling which to re-run; a requeue.
  if (job.auto_resume_steps.size() == 1 && code != kStall && code != kAppFailure) e.rerun_step = job.auto_resume_steps.front();
  e.next_try = not_before;
  return {.entry = std::move(e), .hasten = std::nullopt};
}

FaultAnswer judge_fault(const FaultFacts& f, const PolicyConfig& policy) {
  FaultAnswer answer;
  answer.new_episode = !f.episode.faulty || f.fault.code != f.episode.code;
  answer.fault_history = f.fault_history;
  std::optional<JournalEntry> drain;
  if (answer.new_episode) {
    answer.fault_history = counted_history(f.fault_history, policy, f.now);
    answer.held = answer.fault_history.size() >= policy.flap_max_faults;
    std::vector<std::uint32_t> ended;  // the jobs the fault ends here: their timelines tell each cure step
    for (const auto& job : f.jobs)
      if (job.auto_resume) ended.push_back(job.job_id);
    drain = episode_drain(policy.cure, f.fault, answer.held, drain_reason(f.fault, answer.held, policy), ended, f.node, f.now);
  }
  // A fault announced ahead of time (EC2 maintenance, spot): the jobs are signalled to checkpoint
  // first, the node is drained right after (no new job lands on a node about to go), and the jobs are
  // requeued when the grace is over.
  const bool signals_first = f.fault.checkpoint_first.has_value();
  if (drain && !signals_first) answer.entries.push_back(*drain);
  // A job running here whose failed step asked for the sweep is listed twice: told and requeued once
  // (as an auto-resume job, if either listing says it is one).
  std::set<std::pair<std::uint32_t, std::uint32_t>> told, answered;
  for (const auto& job : f.jobs) {
    const std::pair key{job.job_id, job.restart_count};
    if (job.auto_resume && answered.contains(key)) continue;
    answer_for_job(answer, job, f, policy, told.insert(key).second);
    if (job.auto_resume) answered.insert(key);
  }
  if (drain && signals_first) answer.entries.push_back(*drain);
  return answer;
}

JournalEntry episode_drain(const CureConfig& config, const CheckResult& fault, bool held, std::string reason,
                           const std::vector<std::uint32_t>& jobs, const std::string& node, WallTime now) {
  JournalEntry drain = due_entry(Action::drain, node, fault.code, now);
  drain.reason = std::move(reason);
  drain.held = held;
  CureProgress cure;
  cure.chain = cure_chain(config, fault, held);
  cure.gpus = fault.gpus;
  cure.since = now;
  drain.reboot = !held && !cure.chain.empty() && cure.chain.front() == Action::reboot;
  constexpr std::size_t kMaxJobs = 64;  // bounded: the entry is saved with the journal
  for (auto job : jobs)
    if (cure.jobs.size() < kMaxJobs && std::find(cure.jobs.begin(), cure.jobs.end(), job) == cure.jobs.end())
      cure.jobs.push_back(job);
  drain.cure = std::move(cure);
  return drain;
}

}  // namespace ar::healthd::policy
