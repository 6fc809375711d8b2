#include "collectors/process_tree.hpp"

#include "runtime/proc_stat.hpp"

#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <system_error>

namespace ar::healthd {
namespace {

// The children of every thread of `pid` (a child forked by a thread is listed under that thread).
std::vector<std::uint32_t> children_of(const std::filesystem::path& proc_root, std::uint32_t pid) {
  std::vector<std::uint32_t> out;
  std::error_code ec;
  std::filesystem::directory_iterator threads(proc_root / std::to_string(pid) / "task", ec);
  if (ec) return out;
  for (const auto& t : threads) {
    std::ifstream in(t.path() / "children");
    std::uint32_t child = 0;
    while (in >> child) out.push_back(child);
  }
  return out;
}

}  // namespace

ProcessTreeSample sample_process_tree(const std::filesystem::path& proc_root, std::uint32_t pid,
                                      std::uint64_t expected_start, std::size_t max_processes) {
  ProcessTreeSample s;
  const auto root = read_proc_stat(proc_root, pid);
  if (!root || (expected_start != 0 && root->start != expected_start)) return s;
  s.found = true;
  s.start_ticks = root->start;
  static const long ticks = [] {
    const long t = ::sysconf(_SC_CLK_TCK);
    return t > 0 ? t : 100;
  }();
  std::uint64_t cpu_ticks = 0;
  std::set<std::uint32_t> seen;  // a pid is read once, whatever the lists say
  std::vector<std::uint32_t> todo{pid};
  while (!todo.empty() && s.processes < max_processes) {
    const auto p = todo.back();
    todo.pop_back();
    if (!seen.insert(p).second) continue;
    const auto st = p == pid ? root : read_proc_stat(proc_root, p);
    if (!st) continue;  // ended since it was listed
    ++s.processes;
    s.pids.push_back(p);
    cpu_ticks += st->utime + st->stime;
    if (st->state == 'D') s.uninterruptible.push_back(p);
    for (auto c : children_of(proc_root, p)) todo.push_back(c);
  }
  s.cpu_s = static_cast<double>(cpu_ticks) / static_cast<double>(ticks);
  return s;
}

}  // namespace ar::healthd
