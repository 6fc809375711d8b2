// Turns each sweep into journal entries: the policy of auto-resume, on one node. It keeps the node's
// episode, gathers the typed facts the pure policies decide from (policy/fault_policy.hpp for a faulty
// sweep, policy/return_policy.hpp for a healthy one, the executors' sweep rules) and journals what they
// answer; actions/slurm_actions.hpp carries the entries out on Slurm.
//
//   faulty node  -> drain it ("healthd: <code>: <message>") and requeue the auto-resume jobs on it,
//                   once per failed attempt, then release Slurm's requeue hold so they start again in
//                   seconds on healthy nodes;
//   notice       -> a fault announced ahead of time (EC2 maintenance, spot): the auto-resume jobs are
//                   signalled to checkpoint first; drain and requeue follow after the grace;
//   healthy node -> a failed auto-resume step is the application's failure: nothing happens (unless
//                   the admin's policy resumes on any failure); a node healthd drained itself comes
//                   back after `recovery_passes` healthy sweeps, unless it keeps failing.
//   back in service while faulty (an admin resumed it, or the drain was withheld by the share cap):
//                   healthd does not drain it again for the same fault, and does not requeue jobs
//                   for it either (they would restart onto the fault); status says so.
//
// A requeue is a journal entry with steps (decide, requeue, annotate, release), each saved before
// its Slurm call, so a daemon killed between any two calls finishes the others once after its
// restart. A job is requeued only once the node that failed it is out of service, and released
// from Slurm's hold only then.
//
// Why an attempt ended goes into the job's admin comment (a line of its own: other lines are kept),
// never the user's --comment. A requeued job gets a top priority while it waits (requeue_priority)
// and Slurm's own once it runs.
//
// Nothing is carried out until Slurm has answered once and knows this node (node_name): a daemon
// with a wrong node name must not drain or requeue someone else's.
//
// Every action goes through the journal first. Runs on one thread (the engine's).
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actions/slurm_actions.hpp"
#include "vocabulary/node_health.hpp"
#include "actions/slurm_client.hpp"
#include "checks/check.hpp"
#include "config/config.hpp"
#include "engine/rank_evidence.hpp"
#include "engine/stall_watch.hpp"
#include "engine/straggler_watch.hpp"
#include "policy/fault_policy.hpp"
#include "policy/sweep_rule.hpp"
#include "state/journal.hpp"
#include "state/timeline.hpp"

namespace ar::healthd {

// A job running on this node, as the registry knows it.
struct LocalJob {
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  bool auto_resume = false;
  std::optional<std::uint32_t> max_resumes;  // the user's cap, if lower than the admin's
  std::optional<proto::Heartbeat> heartbeat;  // its progress watchdog, if it named one
  bool batch_here = false;                    // its batch script runs on this node
  // Its srun steps running here that were started with --auto-resume=1: with exactly one, a fault
  // here may re-run that step inside the allocation instead of requeueing the job.
  std::vector<std::uint32_t> auto_resume_steps;
  std::optional<std::uint32_t> uid = std::nullopt;  // its owner: the heartbeat is read with their rights only
  // Its tasks here, as slurmstepd forked them (per-rank heartbeats only): judged when it stalls.
  std::vector<LocalTask> tasks{};
};

// The failure of an auto-resume step's task that made healthd look at its node now.
struct StepFailure {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::uint32_t restart_count = 0;
  std::uint32_t task_rank = 0;
  int wait_status = 0;
  bool auto_resume = false;
  std::optional<std::uint32_t> max_resumes;
};

class Responder {
 public:
  // `run_hook` runs [[policy.hook]] programs (default: run_process).
  Responder(std::string node, PolicyConfig policy, SlurmClient& slurm, Journal& journal, Timeline& timeline,
            HookRunner run_hook = {});

  void set_policy(const PolicyConfig& p) {
    // Out of report_only: a fault still standing is a new episode, acted on at the next sweep,
    // unless healthd had drained for it before (as after a restart: not drained again).
    if (policy_.report_only && !p.report_only) {
      const auto& own = journal_.own_drain();
      faulty_ = own.has_value();
      fault_code_ = own ? own->code : std::string();
      reported_.clear();
    }
    policy_ = p;
    actions_.set_policy(p);
  }

  // Judges the node after a sweep and journals what must be done. `jobs` are the jobs running here.
  // `full_pass`: every check ran (or stood) in this sweep, so a healthy one counts towards resuming
  // the node; a poll sweep acts on faults only.
  void on_sweep(const std::vector<CheckResult>& results, const std::vector<LocalJob>& jobs,
                const std::optional<StepFailure>& trigger, WallTime now, bool full_pass = true);

  // How GPUs are reset, what a cure step that may have cured a fault asks of the engine, and this
  // boot's id (actions/slurm_actions.hpp set_cure).
  void set_cure(GpuResetter reset, std::function<void(const std::string& code)> cured, std::string boot_id) {
    actions_.set_cure(std::move(reset), std::move(cured), std::move(boot_id));
  }

  // How job heartbeats are read (default: read_heartbeat_as_owner, here; the daemon bounds it by a deadline).
  void set_heartbeat_reader(HeartbeatReader reader) {
    heartbeat_reader_ = reader;
    stall_watch_ = StallWatch(std::move(reader));
  }
  // The clock stalls are timed by (default: the steady clock; tests move their own).
  void set_stall_clock(std::function<StallClock::time_point()> clock) { stall_clock_ = std::move(clock); }
  // Where the tasks of stalled jobs are looked at (default /proc; tests give a tree of their own).
  void set_proc_root(std::filesystem::path root) { tasks_ = TaskSampler(std::move(root)); }

  // What carries out the journal (actions/slurm_actions.hpp): the engine asks it directly after
  // each judgement. The three below are its own, for the tests that drive the responder alone.
  SlurmActions& actions() { return actions_; }
  // Carries out the journal entries that are due.
  void run_due(WallTime now) { actions_.run_due(now); }
  void follow_requeued(WallTime now) { actions_.follow_requeued(now); }
  std::optional<WallTime> next_due() const { return actions_.next_due(); }

  NodeStanding standing() const { return {faulty_, fault_code_, journal_.own_drain().has_value()}; }
  std::size_t pending_actions() const { return journal_.pending().size(); }
  // The stalls this node was named the suspect of that count towards the lemon rule now.
  std::size_t suspicions(WallTime now) const;
  // The jobs whose ranks here run slower than the job's median now ([policy] straggler_share).
  std::size_t stragglers() const { return straggling_.size(); }
  nlohmann::json status() const;

  // Where notices go (vocabulary/notice.hpp): incidents here, what was carried out in the actions.
  void set_notices(NoticeSink* sink, std::uint32_t failing_after) {
    notices_ = sink;
    actions_.set_notices(sink, failing_after);
  }

  // An admin's actions through healthctl (root only; checked by the server), journalled like
  // healthd's own and carried out at once. The drain is held: healthd never returns the node by
  // itself; `resume` does, of healthd's drains (held or not), and of anyone's with `force`. They are
  // carried out under report_only too: they are the admin's decision, not healthd's.
  // `uid`: who asked, and `request`: the request's id (EventsQuery's "request"), for the notices.
  void admin_drain(const std::string& reason, std::uint32_t uid, std::uint64_t request, WallTime now);
  void admin_resume(bool force, std::uint32_t uid, std::uint64_t request, WallTime now);
  // The checks forgot `code` (`forgotten` of them had it): an episode of it is over, so the fault
  // found again is a new one (drained for again), and a node healthd drained for it comes back after
  // its healthy passes as after any fault.
  // `busy`: checks hung in a run, not asked.
  void admin_clear(const std::string& code, std::size_t forgotten, std::size_t busy, std::uint32_t uid,
                   std::uint64_t request, WallTime now);

  // An event of a job's story that the responder did not make (a step failed), for the timeline.
  void note(std::uint32_t job_id, TimelineEvent e) { timeline_.record(job_id, std::move(e)); }

 private:
  void journal(JournalEntry e);
  // report_only: says once per episode what `e` would have done, instead of journalling it.
  void report(const JournalEntry& e);
  // The fault branch of on_sweep: policy/fault_policy.hpp decides from the facts gathered here; what
  // it answers is told, noted and journalled.
  void on_fault(CheckResult fault, const std::vector<LocalJob>& jobs, const std::optional<StepFailure>& trigger,
                WallTime now);
  // A new episode's log line and incident notice.
  void tell_new_episode(const CheckResult& fault, WallTime now);
  // A job, with what the journal holds for this attempt of it already.
  policy::JobAtFault at_fault(std::uint32_t job_id, std::uint32_t restart_count, bool auto_resume,
                              std::optional<std::uint32_t> max_resumes, std::vector<std::uint32_t> steps) const;
  // A requeue for healthd's own reason (a stall, an application failure), due now.
  void queue_requeue(const policy::JobAtFault& job, const std::string& code, const std::string& message, WallTime now);
  void hasten(const policy::JobAtFault& job, WallTime by);
  // The heartbeats of the jobs whose batch script runs here, read at a full sweep (so this node has
  // just checked itself): what changed is noted in the jobs' timelines; the stalls confirmed now are
  // answered, for on_sweep to act on when this node is healthy.
  std::vector<StallEvent> poll_stalls(const std::vector<LocalJob>& jobs, const std::vector<CheckResult>& results,
                                      WallTime now, bool full_pass);
  // A stall noted of a job with per-rank heartbeats that runs tasks here: this node's evidence about
  // its own part, in the timeline, and in the job's admin comment when it points here.
  void judge_own_ranks(const StallEvent& stall, const LocalJob& job, const std::vector<CheckResult>& results, WallTime now);
  void act_on_stall(const StallEvent& stall, WallTime now);
  // The per-rank jobs with ranks here, at a full sweep: their pace against the rest of the job
  // (engine/straggler_watch.hpp); a node found straggling is reported once an attempt and, under
  // straggler_action = "exclude", requeued without at the job's next complete checkpoint.
  void watch_stragglers(const std::vector<LocalJob>& jobs, const std::vector<CheckResult>& results, WallTime now);
  void report_straggler(const StragglerFinding& f, const LocalJob& job, const std::string& message, WallTime now);
  void exclude_at_checkpoint(const LocalJob& job, WallTime now);
  // Asks each sweep rule of the executors' registry (policy/sweep_rule.hpp) and journals what it answers.
  void ask_sweep_rules(const std::vector<CheckResult>& results, WallTime now, bool full_pass);

  std::string node_;
  PolicyConfig policy_;
  Journal& journal_;
  Timeline& timeline_;
  bool faulty_ = false;
  std::string fault_code_;
  std::uint32_t healthy_passes_ = 0;
  std::optional<WallTime> last_healthy_pass_;
  std::set<std::string> reported_;  // report_only: what this episode already said it would do
  // The rules that decide an action of their own from each sweep (notify_only's), made from the
  // executors' registry; each remembers its own episodes (lost on a restart).
  std::vector<std::unique_ptr<policy::SweepRule>> sweep_rules_;
  NoticeSink* notices_ = nullptr;
  StallWatch stall_watch_{
      [](const std::string& path, std::uint32_t uid) { return read_heartbeat_as_owner(path, uid); }};
  std::function<StallClock::time_point()> stall_clock_ = [] { return StallClock::now(); };
  TaskSampler tasks_;  // what the tasks of jobs with per-rank heartbeats did, look by look
  HeartbeatReader heartbeat_reader_ = [](const std::string& path, std::uint32_t uid) {
    return read_heartbeat_as_owner(path, uid);
  };
  StragglerWatch straggler_watch_;
  // The jobs this node straggles in now, by job: what was found and said, and the exclusion waiting
  // for the job's next checkpoint.
  struct Straggling {
    std::uint32_t restart_count = 0;
    std::string message;  // the finding and what the checks say
    bool checkpoint_read = false;
    std::optional<FileTime> checkpoint_before = std::nullopt;  // the newest complete checkpoint when it was found
    bool requeue_asked = false;
  };
  std::map<std::uint32_t, Straggling> straggling_;
  SlurmActions actions_;  // carries out what is journalled here
};

}  // namespace ar::healthd
