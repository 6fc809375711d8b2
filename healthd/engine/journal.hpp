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
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ar::healthd {

using WallTime = std::chrono::system_clock::time_point;

enum class ActionKind { drain, requeue, resume, comment, signal };
std::string to_string(ActionKind k);

struct JournalEntry {
  std::uint64_t id = 0;
  ActionKind kind = ActionKind::drain;
  std::string node;
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;  // requeue: the attempt that failed; never requeue past it twice
  std::optional<std::uint32_t> cap; // requeue: the job's own cap on resumes, when the user set one
  std::string code;                 // fault code behind the action
  std::string reason;               // drain reason / comment text / signal name
  bool reboot = false;              // drain: the cure is a reboot (scontrol reboot ASAP), not only a drain
  WallTime created;
  std::uint32_t attempts = 0;
  WallTime next_try;
  std::string last_error;
};

// healthd's own drain of its node, remembered so that only its own drains are ever undone.
struct OwnDrain {
  std::string code;
  std::string reason;
  WallTime at;
  bool held = false;  // repeated faults: stays drained until an admin resumes the node
  bool reboot = false;  // Slurm reboots the node and resumes it: healthd does not resume it itself
};

class Journal {
 public:
  explicit Journal(std::filesystem::path file) : file_(std::move(file)) {}

  std::expected<void, std::string> load();
  std::expected<void, std::string> save() const;

  // Adds an entry and persists the journal before returning.
  std::expected<std::uint64_t, std::string> add(JournalEntry e);
  std::expected<void, std::string> complete(std::uint64_t id);
  // Records a failed try; the next one waits longer (2 s doubling to 60 s).
  std::expected<void, std::string> retry_later(std::uint64_t id, const std::string& error, WallTime now);

  const std::vector<JournalEntry>& pending() const { return pending_; }
  bool has_pending(ActionKind kind, std::uint32_t job_id, std::uint32_t restart_count) const;
  // A pending entry due later than `by` is made due at `by` (a fault that cannot wait for a grace).
  std::expected<void, std::string> hasten(ActionKind kind, std::uint32_t job_id, std::uint32_t restart_count, WallTime by);

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

  std::optional<OwnDrain>& own_drain() { return own_drain_; }
  std::vector<WallTime>& fault_history() { return fault_history_; }

 private:
  std::filesystem::path file_;
  std::uint64_t next_id_ = 1;
  std::vector<JournalEntry> pending_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> requeued_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> signalled_;
  std::optional<OwnDrain> own_drain_;
  std::vector<WallTime> fault_history_;
};

}  // namespace ar::healthd
