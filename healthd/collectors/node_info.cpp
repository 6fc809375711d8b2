#include "node_info.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/statvfs.h>
#include <sys/timex.h>

#include "collectors/host_path.hpp"
#include "sysfs_read.hpp"

namespace ar::healthd {

std::expected<std::uint32_t, std::string> read_online_cpus(const std::filesystem::path& host_root) {
  const auto online = under_root(host_root, "/sys/devices/system/cpu/online");
  if (auto list = read_trimmed(online); list) {
    auto n = count_cpu_list(*list);
    if (!n) return std::unexpected(online.string() + ": " + n.error());
    return n;
  }
  // No sysfs (some containers): count the processors /proc/cpuinfo lists.
  const auto cpuinfo = under_root(host_root, "/proc/cpuinfo");
  std::ifstream in(cpuinfo);
  if (!in) return std::unexpected(online.string() + " and " + cpuinfo.string() + ": cannot open");
  std::uint32_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("processor") && line.find(':') != std::string::npos) ++n;
  if (n == 0) return std::unexpected(cpuinfo.string() + ": no processor listed");
  return n;
}

std::expected<std::uint64_t, std::string> read_mem_total_kib(const std::filesystem::path& host_root) {
  const auto meminfo = under_root(host_root, "/proc/meminfo");
  std::ifstream in(meminfo);
  if (!in) return std::unexpected(meminfo.string() + ": cannot open: " + std::strerror(errno));
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("MemTotal:")) continue;
    std::istringstream fields(line.substr(9));
    std::uint64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return kib;
    return std::unexpected(meminfo.string() + ": unreadable MemTotal line: '" + line + "'");
  }
  return std::unexpected(meminfo.string() + ": no MemTotal line");
}

std::expected<std::uint64_t, std::string> read_fs_size(const std::filesystem::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::unexpected(dir.string() + ": statvfs: " + std::strerror(errno));
  return static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
}

std::expected<ClockState, std::string> read_clock_state() {
  struct timex tx {};
  tx.modes = 0;  // read only
  int state = ::ntp_adjtime(&tx);
  if (state < 0) return std::unexpected(std::string("ntp_adjtime: ") + std::strerror(errno));
  return ClockState{state == TIME_ERROR || (tx.status & STA_UNSYNC) != 0, tx.maxerror};
}

std::expected<std::set<std::string>, std::string> read_process_names(const std::filesystem::path& host_root) {
  const auto proc = under_root(host_root, "/proc");
  std::set<std::string> names;
  std::error_code ec;
  bool any_pid = false;
  for (std::filesystem::directory_iterator it(proc, ec), end; !ec && it != end; it.increment(ec)) {
    const auto pid = it->path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    any_pid = true;
    if (auto comm = read_trimmed(it->path() / "comm"); comm) names.insert(*comm);  // a process may just have exited
  }
  if (ec) return std::unexpected(proc.string() + ": " + ec.message());
  if (!any_pid) return std::unexpected(proc.string() + ": no process listed (is /proc mounted there?)");
  return names;
}

std::expected<std::set<std::string>, std::string> ProcessFinder::find(const std::filesystem::path& host_root,
                                                                      const std::vector<std::string>& wanted) {
  const auto proc = under_root(host_root, "/proc");
  std::set<std::string> want;
  for (const auto& w : wanted) want.insert(w.substr(0, 15));
  std::set<std::string> found;
  for (const auto& name : want) {
    auto it = pid_of_.find(name);
    if (it == pid_of_.end()) continue;
    if (auto comm = read_trimmed(proc / it->second / "comm"); comm && *comm == name) found.insert(name);
  }
  if (found.size() == want.size()) return found;
  // Something moved (restarted, or never seen): one walk, remembering where each wanted name runs.
  std::error_code ec;
  bool any_pid = false;
  found.clear();
  for (std::filesystem::directory_iterator it(proc, ec), end; !ec && it != end; it.increment(ec)) {
    const auto pid = it->path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    any_pid = true;
    auto comm = read_trimmed(it->path() / "comm");
    if (!comm || !want.contains(*comm)) continue;
    found.insert(*comm);
    pid_of_[*comm] = pid;
  }
  if (ec) return std::unexpected(proc.string() + ": " + ec.message());
  if (!any_pid) return std::unexpected(proc.string() + ": no process listed (is /proc mounted there?)");
  return found;
}

NodeSnapshot read_node_info(const std::filesystem::path& host_root, bool with_clock, ProcessFinder* finder,
                            const std::vector<std::string>& wanted) {
  NodeSnapshot s;
  s.cpus_online = read_online_cpus(host_root);
  s.mem_total_kib = read_mem_total_kib(host_root);
  s.shm_bytes = read_fs_size(under_root(host_root, "/dev/shm"));
  if (with_clock) s.clock = read_clock_state();
  s.processes = finder ? finder->find(host_root, wanted) : read_process_names(host_root);
  return s;
}

}  // namespace ar::healthd
