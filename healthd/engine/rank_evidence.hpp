// Which node is behind a stalled job: what one node can say about its own part of it.
//
// A hung collective stops every rank: the rank whose GPU, driver call or data loader hung, and every
// other rank waiting for it in the collective. Their heartbeats all stop within a step of each
// other, so the files alone rarely tell who stopped the job. Each node's healthd therefore judges its
// own ranks when the job's progress stops (engine/stall_watch.hpp notes it on every node that runs
// ranks of a job with per-rank heartbeats), from evidence only it can see:
//   - a rank that stopped first: its last beat older than the job's newest by more than `behind`
//     (a quarter of the stall time, at least 2 s), or no beat at all while other ranks beat;
//   - a task (or a process under it) in uninterruptible sleep (D) at two looks in a row;
//   - a task whose CPU time did not move over the window while it should be computing or, waiting in
//     a collective, spinning (NCCL's ranks spin while they wait: a rank waiting on the others is busy);
//   - a GPU a task holds (NVML's processes on it) at 0% while the job's other GPUs here are busy (a
//     waiting rank's GPU spins in the collective's kernel; the one that hung runs nothing);
// and the node's own checks, swept at that moment (a failing one is a fault, acted on as any fault).
// A node the evidence points to says so in the job's admin comment (auto_resume/job_comment.hpp
// EvidenceLine); the node that acts on the stall compares the nodes' lines (policy/suspect_policy.hpp).
//
// The tasks' process ids come from slurmstepd (the plugin's task_start, as root). The heartbeat
// files are the user's, read with the user's rights only: they can point only at the user's own job.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "collectors/heartbeat_reader.hpp"
#include "collectors/process_tree.hpp"
#include "engine/stall_watch.hpp"
#include "vocabulary/device_reading.hpp"

namespace ar::healthd {

// A task of a job on this node: its rank (global task id) and process.
struct LocalTask {
  std::uint32_t rank = 0;
  std::uint32_t pid = 0;
};

// What one task did over the window that ends now.
struct TaskActivity {
  std::uint32_t rank = 0;
  std::uint32_t pid = 0;
  bool found = false;          // the task is still there
  double cpu_s = 0;            // CPU time used in the window (the task and every process under it)
  double window_s = 0;         // how long the window is (0: only one look so far)
  bool uninterruptible = false;  // a process of the task in state D at this look and the one before
  std::vector<std::uint32_t> pids{};  // the task's processes at the last look (which GPUs it holds)
};

// Looks at the tasks of the jobs with per-rank heartbeats at each full sweep, and keeps what it saw
// over the last `window` (bounded: at most kMaxLooks looks per task).
class TaskSampler {
 public:
  static constexpr std::size_t kMaxLooks = 64;
  explicit TaskSampler(std::filesystem::path proc_root = "/proc") : proc_root_(std::move(proc_root)) {}

  // Looks at every task listed; tasks not listed are forgotten.
  void look(const std::vector<LocalTask>& tasks, StallClock::time_point now);
  // Each task's activity over the window ending at its last look.
  std::vector<TaskActivity> activity(const std::vector<LocalTask>& tasks, std::chrono::seconds window) const;

 private:
  struct Look {
    StallClock::time_point at;
    bool found = false;
    double cpu_s = 0;
    bool uninterruptible = false;
    std::vector<std::uint32_t> pids{};
  };
  struct Seen {
    std::uint64_t start_ticks = 0;  // the process first seen under this pid
    std::vector<Look> looks;
  };
  std::filesystem::path proc_root_;
  std::map<std::uint32_t, Seen> by_pid_;
};

struct RankEvidence {
  bool points_here = false;
  std::vector<std::string> items;  // each finding, for people: "rank 1: CPU time did not move in 20 s"
  std::string text() const;
};

// The evidence about this node's tasks of a stalled job: `ranks`, every rank's last beat as the
// stall was noted; `tasks`, this node's tasks' activity; `stall`, the job's stall time.
// `gpus`: what this node's GPUs are doing (the GPU check's reading of this sweep; empty without GPUs).
RankEvidence judge_ranks(const std::map<std::uint32_t, FileTime>& ranks, const std::vector<TaskActivity>& tasks,
                         std::chrono::seconds stall, const std::vector<GpuActivity>& gpus = {});

// How far behind the job's newest beat a rank's last beat must be to count as stopping first.
std::chrono::seconds behind_limit(std::chrono::seconds stall);

}  // namespace ar::healthd
