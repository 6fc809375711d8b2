// One process's line of /proc/PID/stat, read the one way: the process runner (its child's tree, at a
// deadline) and the collectors (a stalled job's tasks) both read it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace ar::healthd {

struct ProcStat {
  char state = '?';         // R, S, D, Z, ...
  std::uint32_t ppid = 0;
  std::uint64_t utime = 0;  // clock ticks
  std::uint64_t stime = 0;
  std::uint64_t start = 0;  // clock ticks since boot: tells a reused pid from the process first seen
};

// `pid`'s stat under `proc_root` (normally /proc); none when the process is gone or the line is not
// in the kernel's form.
std::optional<ProcStat> read_proc_stat(const std::filesystem::path& proc_root, std::uint32_t pid);

}  // namespace ar::healthd
