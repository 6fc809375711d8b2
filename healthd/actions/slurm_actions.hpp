// Carries out what the responder (engine/responder.hpp) journalled, on Slurm: drain (and a reboot
// where that is the cure), requeue in steps, resume, annotate a job's admin comment, signal a job to
// checkpoint, and the admin's hooks ([[policy.hook]]): a new action as config, not code.
//
// Every entry is in the journal before its first Slurm call, and each step of a requeue is saved
// before the next call, so a daemon killed between any two calls finishes the others once after its
// restart; each action looks at Slurm's state first, so a replay never does a thing twice. Slurm's
// errors arrive typed (actions/slurm_client.hpp: gone, refused, not answering); no decision here
// reads an error's or a reason's prose. A hook runs after an action healthd carried out (not after
// one it found nothing to do for), on a thread of its own that the engine polls, never waits for;
// it runs at least once (twice only if the daemon is killed between journalling it and marking its
// action done).
//
// Nothing is carried out until Slurm has answered once and knows this node (node_name): a daemon
// with a wrong node name must not drain or requeue someone else's. Runs on the engine's thread; Slurm
// calls block, each bounded by [slurm] timeout_s, and a hook by its own timeout.
#pragma once

#include <cstdint>
#include <ctime>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actions/background_runs.hpp"
#include "actions/cure_walk.hpp"
#include "actions/executor.hpp"
#include "actions/gpu_reset.hpp"
#include "actions/requeue_follow_up.hpp"
#include "runtime/process.hpp"
#include "actions/slurm_client.hpp"
#include "config/config.hpp"
#include "runtime/backoff.hpp"
#include "state/journal.hpp"
#include "state/timeline.hpp"
#include "policy/sweep_rule.hpp"
#include "vocabulary/fault_codes.hpp"
#include "vocabulary/notice.hpp"

namespace ar::healthd {

class SlurmActions {
 public:
  // `run_hook`: how the admin's programs are run (empty: run_process).
  SlurmActions(std::string node, PolicyConfig policy, SlurmClient& slurm, Journal& journal, Timeline& timeline,
               HookRunner run_hook = {});

  void set_policy(const PolicyConfig& p) { policy_ = p; }
  // Where notices of what was carried out go (vocabulary/notice.hpp), and after how many failed tries
  // in a row an action is said to be failing. Unset: none are raised.
  void set_notices(NoticeSink* sink, std::uint32_t failing_after) {
    notices_ = sink;
    failing_after_ = failing_after;
  }

  // The cure chain (policy/cure_plan.hpp, actions/cure_walk.cpp). `reset`: how GPUs are reset
  // (empty: reset_gpus without looking at NVML); `cured(code)`: a step carried out that may have
  // cured fault `code` (a GPU reset): the checks forget what they remember of it, and the node is
  // judged again. `boot_id`: this boot's id, to tell a reboot asked for from one that happened.
  void set_cure(GpuResetter reset, std::function<void(const std::string& code)> cured, std::string boot_id) {
    resets_.reset = std::move(reset);
    resets_.cured = std::move(cured);
    boot_id_ = std::move(boot_id);
  }
  // The responder found fault `code` standing at `at`, or a healthy sweep: the cure walks on
  // (actions/cure_walk.hpp).
  void fault_seen(const std::string& code, WallTime at, WallTime now) { cure_fault_seen(services(), code, at, now); }
  // How many jobs run on this node (the registry, at the last sweep): a GPU reset waits for none.
  // Slurm's own view lags: after a requeue off a draining node, slurmctld 22.05 keeps the node MIXED
  // for minutes with no job on it.
  void set_jobs_here(std::size_t n) { jobs_here_ = n; }
  void healthy_seen(WallTime now) { cure_healthy_seen(services(), now); }
  bool cure_under_way() const { return ar::healthd::cure_under_way(journal_); }

  // Carries out the journal entries that are due (all of them after a restart). Slurm not answering
  // leaves an entry pending for a later try, with backoff.
  void run_due(WallTime now);
  // Follows requeued jobs until they run again, for the timeline (requeue_follow_up.hpp).
  void follow_requeued(WallTime now);
  // When the next journal entry or follow-up is due: the engine wakes for it.
  std::optional<WallTime> next_due() const;
  // Where the programs and GPU resets running for entries post their ends: the engine wakes on a
  // post (set_wake), and the next run_due carries those entries out at once.
  RunsEnded& runs_ended() { return *runs_ended_; }
  // Whether a program or GPU reset runs for an entry (or ended, its result not yet taken).
  bool runs_going() const { return programs_.any_running() || resets_.runs.any_running(); }

  // Requeued jobs not yet running again: the node is not returned before they are.
  bool following() const { return follow_up_.following(); }
  // The node is healthy: an admin's earlier override of a fault no longer applies.
  void clear_override() { memory_.overridden.clear(); }
  // What status shows of this side: an override, a withheld drain, Slurm not ready.
  void add_status(nlohmann::json& j) const;

  // One kind of journal entry and what carries it out: a plain function over the services of
  // actions/executor.hpp, each in a file of its own (actions/*_executor.cpp), listed once
  // (executors.cpp). Nothing here changes when one is added.
  struct Executor {
    Action kind;
    int order;  // within one pass over the due entries, lower first
    ExecutorFunction function = nullptr;
    bool needs_slurm = true;  // false: carried out while slurmctld is not answering too
    // The policy rule that journals this kind from each sweep, where one decides it on its own
    // (policy/sweep_rule.hpp); the responder asks it. Unset: the responder's own judgment does.
    policy::SweepRuleMaker sweep_rule = nullptr;
  };
  static const std::vector<Executor>& executors();
  // nullptr: no executor (what a fault calls for, warn or reboot, is never an entry of its own).
  static const Executor* executor_for(Action kind);

 private:
  // run_due's parts: one entry carried out by its executor, and what follows when it finished or failed.
  std::expected<Carried, std::string> carry_out(const JournalEntry& e, WallTime now);
  void entry_finished(const JournalEntry& e, const Carried& carried, WallTime now);
  void entry_failed(const JournalEntry& e, const std::string& error, std::chrono::steady_clock::time_point started, WallTime now);
  // True once Slurm has answered and knows node_; checked again every few seconds until then.
  bool slurm_ready(WallTime now);
  // What the executors that are plain functions see (actions/executor.hpp).
  ExecutorServices services();
  // Raises a notice about `e` (its node, job, code) with `message` (raise_notice).
  void notice(NoticeKind kind, const JournalEntry& e, std::string message, std::string action, WallTime now);
  // The notice an entry carried out raises, if any (`carried.acted`: what it did on Slurm).
  void notice_done(const JournalEntry& e, const Carried& carried, WallTime now);

  std::string node_;
  PolicyConfig policy_;
  SlurmClient& slurm_;
  Journal& journal_;
  Timeline& timeline_;
  ActingMemory memory_;  // the share's withheld drain, an admin's override (status shows both)
  bool journal_unwritable_ = false;
  RequeueFollowUp follow_up_;  // the requeued jobs, until each runs again
  bool slurm_ready_ = false;
  std::string slurm_problem_;  // why not ready, for the log (once per change) and status
  WallTime next_slurm_check_{};
  std::minstd_rand slurm_check_rng_ = backoff_rng();
  // Running on threads of their own, by journal entry: the admin's programs (hooks, deep checks;
  // program_runs.hpp) and GPU resets (background_runs.hpp).
  ProgramRuns programs_;
  GpuResets resets_;
  std::shared_ptr<RunsEnded> runs_ended_ = std::make_shared<RunsEnded>();
  NoticeSink* notices_ = nullptr;
  std::uint32_t failing_after_ = 3;
  // The owners of the jobs acted on, as Slurm last gave them (notices name the user). Bounded: an
  // entry goes when its job is no longer followed.
  JobOwners owners_;
  std::size_t jobs_here_ = 0;
  std::string boot_id_;
};

}  // namespace ar::healthd
