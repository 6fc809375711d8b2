// The action journal: every action healthd decides on Slurm is written here (fsync'd) before it is
// carried out and marked done after. A daemon killed mid-incident replays the pending entries at
// start; each action checks Slurm's current state first, so a replay finishes an action once, never
// twice and never zero times.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "vocabulary/action.hpp"
#include "runtime/backoff.hpp"

namespace ar::healthd {

using WallTime = std::chrono::system_clock::time_point;


// The steps of a requeue, in order: decide (cap, node out of service), ask Slurm to requeue, say
// why in the job's comment (the restarted job reads it), release Slurm's requeue hold.
enum class RequeueStep : std::uint8_t { decide = 0, requeue = 1, annotate = 2, release = 3 };

// How far the cure of healthd's drain got (policy/cure_plan.hpp): the chain decided when the node
// was drained, the step under way, and what it came to. Saved with the drain, so a daemon killed
// (or a node rebooted) in the middle goes on with the step it was in.
struct CureProgress {
  enum class Phase : std::uint8_t {
    pending,    // the step is to be journalled at the next sweep that still finds the fault
    running,    // journalled and under way (a reset running, a reboot asked for)
    verifying,  // carried out at `since`: the fault found again after it means it did not cure
    failed,     // the step failed (or did not cure): the chain goes on
    exhausted,  // every step was tried: the node stays out for an admin
    cannot_run, // the current step's means are missing here (no reset command, no RebootProgram, no
                // replace hook): the chain stops, the node stays out for an admin (issue 31)
  };
  std::vector<Action> chain;        // reset_gpu, reboot, replace; empty: drain only
  std::uint32_t step = 0;           // index in chain of the step under way or last done
  Phase phase = Phase::pending;
  WallTime since{};                 // when the phase began
  std::vector<std::string> gpus;    // reset_gpu: the GPUs the fault is on (PCI bus ids)
  std::string boot_id;              // reboot: the boot it was asked in (a new one means it happened)
  std::string last;                 // what the last step came to, for status and explain
  bool deep_checked = false;        // the deep check passed since the cure: the node may return
  std::vector<std::uint32_t> jobs;  // the auto-resume jobs the fault ended here: their timelines tell each step

  bool at_end() const { return step >= chain.size(); }
  Action current() const { return at_end() ? Action::none : chain[step]; }
};

std::string to_string(CureProgress::Phase p);
// "reset_gpu -> reboot -> replace" ("drain only" when empty).
std::string chain_text(const std::vector<Action>& chain);
nlohmann::json cure_to_json(const CureProgress& c);
CureProgress cure_from_json(const nlohmann::json& j);  // throws StateFieldError or json errors

struct JournalEntry {
  std::uint64_t id = 0;
  Action kind = Action::drain;      // drain (reboot: see below), requeue, resume, annotate, signal, hook
  std::string node;
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;  // requeue: the attempt that failed; never requeue past it twice
  std::optional<std::uint32_t> cap; // requeue: the job's own cap on resumes, when the user set one
  std::optional<std::uint32_t> rerun_step;  // requeue: the auto-resume srun step that may run again in
                                            // the allocation instead (SlurmActions decides)
  std::string code;                 // fault code behind the action
  std::string reason;               // drain reason / comment text / signal name
  bool reboot = false;              // drain: the cure is a reboot (scontrol reboot), not only a drain
  bool held = false;                // drain: repeated faults; stays drained until an admin resumes the node
  bool admin = false;               // drain, resume: an admin's, through healthctl (journalled like healthd's own)
  bool force = false;               // admin resume: also of a node healthd did not drain
  std::optional<std::uint32_t> by_uid;  // admin drain, resume: who asked (for the notice)
  std::uint64_t request = 0;            // admin drain, resume: the request it answers (for the notice)
  std::optional<CureProgress> cure;  // drain: the cure chain it starts; reboot/reset_gpu/replace: the progress it carries
  std::string hook;                 // hook: the [[policy.hook]] name
  Action done = Action::none;       // hook: the action it follows (drain, reboot, requeue, resume, signal)
  WallTime created;
  std::uint32_t attempts = 0;
  WallTime next_try;
  std::string last_error;
  // How many times it has waited (wait_until) in its current step; in memory only, as a wait is (a
  // restart starts counting again): an executor polling Slurm polls less often the longer it waits.
  std::uint32_t waits = 0;
  // Requeue: how far the action got. Each step is saved before the next Slurm call, so a daemon
  // killed between two calls picks up at the step it was in and finishes every step once.
  RequeueStep step = RequeueStep::decide;
  // Requeue of a stall: what was decided of the suspects the job's evidence named
  // (policy/suspect_policy.hpp), once decided: the job's whole ExcNodeList from its next attempt on
  // (empty: left as it is) and what was said of them. Saved before the requeue.
  std::vector<std::string> exclude{};
  std::string suspects{};
};

// An entry of `kind` about fault `code` of `node`, due now (`now`): what every decider starts from.
JournalEntry due_entry(Action kind, std::string node, std::string code, WallTime now);

// This node named the suspect of a stalled job (policy/suspect_policy.hpp): kept across restarts, for
// the lemon rule ([policy] lemon_suspicions within lemon_window_s) and for status and metrics.
struct Suspicion {
  WallTime at;
  std::uint32_t job_id = 0;
  std::uint32_t uid = 0;  // the job's owner: one user's jobs alone never make a lemon
  std::string why;        // the node's own evidence, as it wrote it
};
inline constexpr std::size_t kMaxSuspicions = 64;

// healthd's own drain of its node, remembered so that only its own drains are ever undone.
struct OwnDrain {
  std::string code;
  std::string reason;
  WallTime at;
  bool held = false;  // repeated faults: stays drained until an admin resumes the node
  bool reboot = false;  // Slurm reboots the node: healthd does not resume it while the reboot is pending
                        // (after it the node is still drained, and healthd returns it once healthy)
  std::optional<CureProgress> cure;  // the cure chain under way, if the fault has one
  // When to look again at max_drained_share, once every drain of the second Slurm stamped on this
  // one is in place (SlurmActions::settle_share); unset once looked at, or when no share applies.
  std::optional<WallTime> share_look;
  // The other nodes healthd drained around ours, as the look just after the drain saw them: none,
  // and the job's requeue need not wait for share_look; some, and it waits unless the job is on one
  // of them (requeued for that one anyway). Not saved: unknown after a restart, when the requeue waits
  // (at most until share_look), which is never wrong.
  std::optional<std::vector<std::string>> burst{};
};

class Journal {
 public:
  explicit Journal(std::filesystem::path file) : file_(std::move(file)) {}

  std::expected<void, std::string> load();
  std::expected<void, std::string> save();

  // Adds an entry and persists the journal before returning. When the save fails the entry is kept
  // (nothing decided is lost) but the journal is not durable(): no action may be carried out until
  // a later save() succeeds, since an action done before it is written could be done twice or lost.
  std::expected<std::uint64_t, std::string> add(JournalEntry e);
  std::expected<void, std::string> complete(std::uint64_t id);
  // Records a failed try; the next one waits longer (2 s doubling to 60 s).
  std::expected<void, std::string> retry_later(std::uint64_t id, const std::string& error, WallTime now);
  // Not a failure: the action waits for something (a drain to land, a job to leave COMPLETING).
  void wait_until(std::uint64_t id, WallTime at, const std::string& why);
  // What the entry waited for happened (its background run ended): due at `now` if it was due later.
  // In memory only, as a wait is.
  void due_now(std::uint64_t id, WallTime now);
  // A requeue moved on to its next step (saved before that step's Slurm call).
  std::expected<void, std::string> advance(std::uint64_t id, RequeueStep step);
  // A stall's requeue: the suspects decided (JournalEntry::exclude, suspects), saved.
  std::expected<void, std::string> set_suspects(std::uint64_t id, std::vector<std::string> exclude, std::string said);
  // Whether everything in memory is on disk. Saves the journal again when it is not.
  bool durable() const { return durable_; }
  std::expected<void, std::string> make_durable();
  // The earliest time an entry is due, for the engine's wake-up.
  std::optional<WallTime> next_due() const;
  const JournalEntry* find(std::uint64_t id) const;

  const std::vector<JournalEntry>& pending() const { return pending_; }
  bool has_pending(Action kind, std::uint32_t job_id, std::uint32_t restart_count) const;
  // A pending entry still waiting for its grace (never tried) is made due at `by` (a fault that
  // cannot wait for a grace). Entries backing off after Slurm errors keep their backoff.
  std::expected<void, std::string> hasten(Action kind, std::uint32_t job_id, std::uint32_t restart_count, WallTime by);

  // Requeues done, by (job, failed attempt): one requeue per attempt, whoever asks.
  bool requeued(std::uint32_t job_id, std::uint32_t restart_count) const {
    return requeued_.count({job_id, restart_count}) > 0;
  }
  void mark_requeued(std::uint32_t job_id, std::uint32_t restart_count) { requeued_.insert({job_id, restart_count}); }
  // Checkpoint signals sent, by (job, attempt): one per attempt, across restarts.
  bool signalled(std::uint32_t job_id, std::uint32_t restart_count) const {
    return signalled_.count({job_id, restart_count}) > 0;
  }
  void mark_signalled(std::uint32_t job_id, std::uint32_t restart_count) { signalled_.insert({job_id, restart_count}); }

  bool has_pending_drain(const std::string& node) const;

  std::optional<OwnDrain>& own_drain() { return own_drain_; }
  const std::optional<OwnDrain>& own_drain() const { return own_drain_; }
  std::vector<WallTime>& fault_history() { return fault_history_; }
  // The stalls this node was named the suspect of (the newest kMaxSuspicions), oldest first.
  std::vector<Suspicion>& suspicions() { return suspicions_; }
  const std::vector<Suspicion>& suspicions() const { return suspicions_; }

 private:
  std::filesystem::path file_;
  bool durable_ = true;
  std::uint64_t next_id_ = 1;
  std::vector<JournalEntry> pending_;
  std::minstd_rand retry_rng_ = backoff_rng();  // the random part of retry_later's waits
  std::set<std::pair<std::uint32_t, std::uint32_t>> requeued_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> signalled_;
  std::optional<OwnDrain> own_drain_;
  std::vector<WallTime> fault_history_;
  std::vector<Suspicion> suspicions_;
};

}  // namespace ar::healthd
