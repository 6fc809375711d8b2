#include "runtime/proc_stat.hpp"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ar::healthd {

// "pid (comm) state ppid ...": the command name may hold spaces and parentheses (a user names their
// program), so the fields are counted from the last ')'.
std::optional<ProcStat> read_proc_stat(const std::filesystem::path& proc_root, std::uint32_t pid) {
  std::ifstream in(proc_root / std::to_string(pid) / "stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;
  std::string word;
  while (f.size() < 20 && fields >> word) f.push_back(word);
  // After ')': field 3 (state) is f[0], 4 ppid f[1], 14 utime f[11], 15 stime f[12], 22 starttime f[19].
  if (f.size() < 20 || f[0].size() != 1) return std::nullopt;
  auto number = [](const std::string& s) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() ? v : 0;
  };
  return ProcStat{f[0][0], static_cast<std::uint32_t>(number(f[1])), number(f[11]), number(f[12]), number(f[19])};
}

}  // namespace ar::healthd
