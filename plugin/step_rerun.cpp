#include "step_rerun.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace ar::plugin {
namespace {

void set(std::vector<std::string>& env, std::string_view name, const std::string& value, bool only_if_present = false) {
  const std::string prefix = std::string(name) + "=";
  auto it = std::find_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  if (it != env.end()) *it = prefix + value;
  else if (!only_if_present) env.push_back(prefix + value);
}

}  // namespace

std::vector<std::string> rerun_environment(std::vector<std::string> env, const AttemptEnd& line,
                                           const std::string& node_list, std::uint32_t num_nodes) {
  const std::string count = std::to_string(num_nodes);
  set(env, "SLURM_JOB_NODELIST", node_list);
  set(env, "SLURM_NODELIST", node_list, true);
  set(env, "SLURM_JOB_NUM_NODES", count);
  set(env, "SLURM_NNODES", count, true);
  set(env, kStepRerunsEnv, std::to_string(line.reruns));
  set(env, "AUTO_RESUME_LAST_CODE", line.code);
  set(env, "AUTO_RESUME_LAST_NODE", line.node);
  set(env, "AUTO_RESUME_LAST_REASON", line.code + " on " + line.node + ": " + line.message);
  return env;
}

std::vector<std::string> split_cmdline(const std::string& raw) {
  std::vector<std::string> argv;
  std::size_t pos = 0;
  while (pos < raw.size()) {
    std::size_t end = raw.find('\0', pos);
    if (end == std::string::npos) end = raw.size();
    argv.push_back(raw.substr(pos, end - pos));
    pos = end + 1;
  }
  return argv;
}

std::optional<std::uint32_t> parse_count(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string_view v(value);
  std::uint32_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return n;
}

}  // namespace ar::plugin
