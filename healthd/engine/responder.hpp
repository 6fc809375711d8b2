// Turns check results into actions on Slurm: the policy of auto-resume, on one node.
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
// Every action goes through the journal first. Runs on one thread (the engine's); Slurm calls block,
// each bounded by [slurm] timeout_s.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actions/slurm_client.hpp"
#include "checks/check.hpp"
#include "config/config.hpp"
#include "engine/journal.hpp"
#include "engine/timeline.hpp"

namespace ar::healthd {

// A job running on this node, as the registry knows it.
struct LocalJob {
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  bool auto_resume = false;
  std::optional<std::uint32_t> max_resumes;  // the user's cap, if lower than the admin's
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
  Responder(std::string node, PolicyConfig policy, SlurmClient& slurm, Journal& journal, Timeline& timeline);

  void set_policy(const PolicyConfig& p) { policy_ = p; }

  // Judges the node after a sweep and journals what must be done. `jobs` are the jobs running here.
  // `full_pass`: every check ran (or stood) in this sweep, so a healthy one counts towards resuming
  // the node; a poll sweep acts on faults only.
  void on_sweep(const std::vector<CheckResult>& results, const std::vector<LocalJob>& jobs,
                const std::optional<StepFailure>& trigger, WallTime now, bool full_pass = true);

  // Carries out the journal entries that are due (all of them after a restart). Slurm not answering
  // leaves an entry pending for a later try, with backoff.
  void run_due(WallTime now);

  // Follows requeued jobs until they run again, for the timeline.
  void follow_requeued(WallTime now);

  // When the next journal entry or follow-up is due: the engine wakes for it.
  std::optional<WallTime> next_due() const;

  nlohmann::json status() const;

 private:
  void journal(JournalEntry e);
  // A journal entry for this node, due now.
  JournalEntry entry(ActionKind kind, std::string code, WallTime now) const;
  void queue_requeue(const LocalJob& job, const CheckResult& fault, WallTime now, WallTime not_before);
  void queue_signal(const LocalJob& job, const CheckResult& fault, WallTime now);
  bool flapping(WallTime now);
  std::string drain_reason(const CheckResult& fault, bool held) const;

  // One journal entry each; true when it is finished (done, or nothing left to do).
  std::expected<bool, std::string> do_drain(const JournalEntry& e, WallTime now);
  std::expected<bool, std::string> do_requeue(const JournalEntry& e, WallTime now);
  std::expected<bool, std::string> do_resume(const JournalEntry& e, WallTime now);
  std::expected<bool, std::string> do_signal(const JournalEntry& e, WallTime now);
  // The steps of a requeue (see RequeueStep); each saves the next step before its Slurm call.
  // false: waiting, the entry's next try is set.
  std::expected<bool, std::string> requeue_decide(const JournalEntry& e, const JobInfo& job, WallTime now);
  std::expected<bool, std::string> requeue_ask(const JournalEntry& e, const JobInfo& job, WallTime now);
  std::expected<bool, std::string> requeue_annotate(const JournalEntry& e, WallTime now);
  std::expected<bool, std::string> requeue_release(const JournalEntry& e, WallTime now);
  std::expected<bool, std::string> next_step(const JournalEntry& e, RequeueStep step, WallTime now);
  std::expected<std::optional<std::string>, std::string> node_still_schedulable(const JournalEntry& e);
  // Writes `line` as the job's auto-resume line in its admin comment; `current`: the admin comment
  // as last read, if at hand.
  std::expected<void, std::string> annotate(std::uint32_t job_id, const std::string& line,
                                            const std::optional<std::string>& current = std::nullopt);
  // True once Slurm has answered and knows node_; checked again every few seconds until then.
  bool slurm_ready(WallTime now);
  void follow(std::uint32_t job_id, std::uint32_t attempt, WallTime now, bool raised_priority = false);

  struct Followed {
    std::uint32_t job_id;
    std::uint32_t restart_count;  // the attempt that is to run
    WallTime since;
    WallTime next_look;
    bool raised_priority = false;  // set back to Slurm's own once it runs
  };
  // A released job that may need the scheduler asked again once its begin time has passed (see
  // requeue_release).
  struct Nudge {
    std::uint32_t job_id;
    std::uint32_t restart_count;
    std::time_t begin;  // slurmctld's clock
    WallTime at;
    int left;           // updates still allowed
  };

  std::string node_;
  PolicyConfig policy_;
  SlurmClient& slurm_;
  Journal& journal_;
  Timeline& timeline_;
  bool faulty_ = false;
  std::string fault_code_;
  std::uint32_t healthy_passes_ = 0;
  std::optional<WallTime> last_healthy_pass_;
  std::string withheld_;  // why the last drain was withheld (share limit), for status
  std::string overridden_;  // the fault code under which the node was found back in service
  bool journal_unwritable_ = false;
  std::map<std::uint64_t, std::uint32_t> release_waits_;  // by journal entry: looks at a COMPLETING job
  std::vector<Followed> followed_;
  std::vector<Nudge> nudges_;
  bool slurm_ready_ = false;
  std::string slurm_problem_;  // why not ready, for the log (once per change) and status
  WallTime next_slurm_check_{};
};

}  // namespace ar::healthd
