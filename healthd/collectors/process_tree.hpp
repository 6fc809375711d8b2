// What a task of a job is doing on this host, read from /proc: the CPU time of the task and every
// process under it (a training script often runs under a shell or a launcher, which only waits), and
// which of them sit in uninterruptible sleep (state D: a driver call or I/O that does not return).
//
// The process ids come from slurmstepd (root, through the plugin), never from the job; a pid that
// now names another process (the task ended and the number was reused) is told by its start time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace ar::healthd {

struct ProcessTreeSample {
  bool found = false;              // the task's process is there (and is the one first seen)
  std::uint64_t start_ticks = 0;   // the task's start time, in clock ticks since boot (/proc/PID/stat field 22)
  double cpu_s = 0;                // user + system time of the task and its descendants, in seconds
  std::vector<std::uint32_t> uninterruptible;  // pids in state D
  std::vector<std::uint32_t> pids;             // every process read: the task's and those under it
  std::size_t processes = 0;       // how many were read
};

inline constexpr std::size_t kMaxTreeProcesses = 4096;

// Reads the process `pid` and its descendants under `proc_root` (normally /proc) through the
// task/*/children lists. `expected_start`: the task's start time first seen (0: not known yet); a
// process started at another time is another process, and the sample says not found.
ProcessTreeSample sample_process_tree(const std::filesystem::path& proc_root, std::uint32_t pid,
                                      std::uint64_t expected_start = 0, std::size_t max_processes = kMaxTreeProcesses);

}  // namespace ar::healthd
