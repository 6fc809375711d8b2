// The host's own vital signs, read into plain values (no judging here): online CPUs, memory, the size
// of /dev/shm, whether the clock is synchronised, and which processes run.
//
// Read under the host root: /sys/devices/system/cpu/online (else /proc/cpuinfo), /proc/meminfo,
// statvfs(/dev/shm), /proc/<pid>/comm. Not under the host root: the clock, which is the kernel's
// (adjtimex(2) answers for the machine healthd runs on, whatever root it reads files under).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ar::healthd {

struct ClockState {
  bool unsynced = false;     // STA_UNSYNC set, or adjtimex returned TIME_ERROR
  long max_error_us = 0;     // the kernel's maximum error estimate
};

struct NodeSnapshot {
  std::expected<std::uint32_t, std::string> cpus_online = std::unexpected("not read");
  std::expected<std::uint64_t, std::string> mem_total_kib = std::unexpected("not read");
  std::expected<std::uint64_t, std::string> shm_bytes = std::unexpected("not read");
  std::expected<ClockState, std::string> clock = std::unexpected("not read");
  std::expected<std::set<std::string>, std::string> processes = std::unexpected("not read");  // comm names
};

std::expected<std::uint32_t, std::string> read_online_cpus(const std::filesystem::path& host_root);
std::expected<std::uint64_t, std::string> read_mem_total_kib(const std::filesystem::path& host_root);
std::expected<std::uint64_t, std::string> read_fs_size(const std::filesystem::path& dir);
std::expected<ClockState, std::string> read_clock_state();
std::expected<std::set<std::string>, std::string> read_process_names(const std::filesystem::path& host_root);

// Finds named processes (by /proc/<pid>/comm) and remembers where: the next look is one file read per
// name, not a walk of every process (a busy node has thousands; the walk was most of a sweep's time).
// Walks again only when a remembered process is gone.
class ProcessFinder {
 public:
  // The names (at most 15 characters, as the kernel keeps them) of `wanted` that run now.
  std::expected<std::set<std::string>, std::string> find(const std::filesystem::path& host_root,
                                                         const std::vector<std::string>& wanted);

 private:
  std::map<std::string, std::string> pid_of_;  // comm -> pid directory name where last seen
};

// Everything at once; the clock only when `with_clock`; the processes (all their names) only without
// a finder, else just the `wanted` ones through it.
NodeSnapshot read_node_info(const std::filesystem::path& host_root, bool with_clock, ProcessFinder* finder = nullptr,
                            const std::vector<std::string>& wanted = {});

}  // namespace ar::healthd
