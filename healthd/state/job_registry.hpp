// The jobs and steps running on this node, as the plugin reported them, kept on disk so a restart of
// healthd does not forget what runs here.
//
// A job is keyed by its id; its steps by (restart count, step id), because a requeued job comes back
// with the same id and a higher SLURM_RESTART_COUNT. Finished jobs stay listed for a retention time.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "auto_resume/protocol.hpp"

namespace ar::healthd {

using WallClock = std::chrono::system_clock;

struct TaskExitRecord {
  std::uint32_t task_rank = 0;
  int wait_status = 0;
  WallClock::time_point at;
};

// A task of a step with per-rank heartbeats, as slurmstepd forked it here.
struct TaskStartRecord {
  std::uint32_t task_rank = 0;
  std::uint32_t pid = 0;
  bool operator==(const TaskStartRecord&) const = default;
};

struct StepRecord {
  std::uint32_t step_id = 0;
  std::uint32_t restart_count = 0;
  bool auto_resume = false;
  bool running = true;
  WallClock::time_point started_at;
  std::optional<WallClock::time_point> ended_at;
  // Failed tasks one by one (at most kMaxTaskExitsPerStep of them, the rest counted); successful ones
  // only counted: a step of thousands of tasks must not make every registry write megabytes long.
  std::vector<TaskExitRecord> task_exits;
  std::uint32_t tasks_ok = 0;
  std::uint32_t failures_not_kept = 0;
  std::optional<WallClock::time_point> last_exit_at;
  // The tasks running here (steps with per-rank heartbeats only; at most kMaxTaskExitsPerStep).
  std::vector<TaskStartRecord> tasks;
};

struct JobRecord {
  std::uint32_t job_id = 0;
  std::uint32_t uid = 0;
  std::uint32_t restart_count = 0;  // the newest attempt seen
  std::optional<std::uint32_t> max_resumes;  // the user's cap (--auto-resume-max), if any
  std::optional<proto::Heartbeat> heartbeat;  // --auto-resume-heartbeat of its newest step that had one
  std::map<std::pair<std::uint32_t, std::uint32_t>, StepRecord> steps;  // (restart_count, step_id)

  // The job asked for auto-resume: its batch step carries the flag, or (salloc/srun jobs, which have
  // no batch step) any of its steps does.
  bool auto_resume() const;
  bool running() const;
  // This node runs the job's batch script in its newest attempt: the node that acts on its stall.
  bool batch_here() const;
  // The srun steps (not the batch script, extern or interactive step) of its newest attempt still
  // running here that were started with --auto-resume=1.
  std::vector<std::uint32_t> running_auto_resume_steps() const;
  // The tasks of its newest attempt's running steps here (per-rank heartbeats only).
  std::vector<TaskStartRecord> running_tasks() const;
  std::optional<WallClock::time_point> last_activity() const;
};

// Decoded task exit status, for people: "exit 3", "signal 9 (Killed)".
std::string describe_wait_status(int wait_status);

// Bounds on what one job keeps: a job may run steps for weeks, a step may have thousands of tasks.
// A job keeps its newest ended steps and every running one; a step keeps its first failed tasks.
inline constexpr std::size_t kMaxEndedStepsPerJob = 8;
inline constexpr std::size_t kMaxTaskExitsPerStep = 1024;

class JobRegistry {
 public:
  // `state_file` is where the registry persists; nothing is read until load().
  explicit JobRegistry(std::filesystem::path state_file) : state_file_(std::move(state_file)) {}

  // Reads the persisted registry. A missing file is an empty registry; an unreadable or corrupt one is
  // an error naming the file (the caller decides whether to move it aside).
  std::expected<void, std::string> load();

  void step_started(const proto::StepStart& m, WallClock::time_point now);
  // A later attempt of a running step that root (slurmstepd) announced, told by the job's owner (the
  // batch script's task, when slurmstepd could not read the count from slurmctld): only the restart
  // count moves, up; the step keeps what root said of it. False (nothing changed) for a job of
  // another uid, a step never announced, or a count not above the job's.
  bool correct_restart_count(std::uint32_t job_id, std::uint32_t step_id, std::uint32_t uid,
                             std::uint32_t restart_count, WallClock::time_point now);
  void task_started(const proto::TaskStart& m, WallClock::time_point now);
  void task_exited(const proto::TaskExit& m, WallClock::time_point now);
  void step_ended(const proto::StepEnd& m, WallClock::time_point now);

  // Drops jobs with no running step whose last activity is older than `retention`.
  std::size_t prune(WallClock::time_point now, std::chrono::seconds retention);

  const std::map<std::uint32_t, JobRecord>& jobs() const { return jobs_; }

  // Writes the registry atomically (temp file, fsync, rename). Error names the file and the cause.
  std::expected<void, std::string> save() const;
  // The text save() writes (the registry as JSON, built one job at a time).
  std::string serialize() const;

  nlohmann::json to_json() const;
  static std::expected<std::map<std::uint32_t, JobRecord>, std::string> from_json(const nlohmann::json& j);

 private:
  StepRecord& step_for(std::uint32_t job_id, std::uint32_t step_id, WallClock::time_point now);

  std::filesystem::path state_file_;
  std::map<std::uint32_t, JobRecord> jobs_;
};

}  // namespace ar::healthd
