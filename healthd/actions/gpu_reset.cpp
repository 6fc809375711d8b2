#include "gpu_reset.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/process.hpp"
#include "config/fields.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {

std::string expand(std::string word, const std::string& gpu, const std::string& node) {
  for (std::size_t pos = 0; (pos = word.find("%g", pos)) != std::string::npos; pos += gpu.size()) word.replace(pos, 2, gpu);
  return expand_node_name(std::move(word), node);
}

}  // namespace

std::optional<CannotRun> reset_cannot_run(const CureConfig& config) {
  const std::string program = config.reset_command.empty() ? std::string() : config.reset_command.front();
  // The config resolves a bare name against the children's PATH at load; one still bare was not found.
  if (program.empty() || program.front() != '/')
    return CannotRun{"[cure] reset_command '" + sanitize(program, 80) + "' was not found in " + kChildPath +
                         " when the config was loaded",
                     "needs a GPU reset: no reset command; set [cure] reset_command"};
  if (::access(program.c_str(), X_OK) != 0) {
    const int err = errno;
    return CannotRun{"[cure] reset_command " + sanitize(program, 200) + " cannot be run: " + std::strerror(err),
                     "needs a GPU reset: reset command not executable; fix [cure] reset_command"};
  }
  return std::nullopt;
}

GpuResetOutcome reset_gpus(const CureConfig& config, const std::vector<std::string>& gpus, const std::string& node,
                           const GpuInspector& inspect) {
  using Kind = GpuResetOutcome::Kind;
  if (auto missing = reset_cannot_run(config)) return {Kind::cannot_run, missing->why};
  if (gpus.empty()) return {Kind::failed, "the fault names no GPU to reset"};
  std::vector<std::string> done;
  for (const auto& gpu : gpus) {
    std::string bus_id = gpu;
    if (inspect) {
      auto snap = inspect(gpu);
      // A GPU NVML cannot reach (fallen off the bus) is not reset: a reboot is its cure.
      if (!snap) return {Kind::failed, "GPU " + sanitize(gpu, 40) + " cannot be looked at before its reset: " + sanitize(snap.error(), 200)};
      if (!snap->bus_id.empty()) bus_id = snap->bus_id;
      if (snap->processes && !snap->processes->empty()) {
        std::string pids;
        for (auto pid : *snap->processes) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
        return {Kind::blocked, "GPU " + bus_id + " is used by process(es) " + pids + ": its reset waits for them"};
      }
      if (config.reset_blocked_by_persistence && snap->persistence_mode.value_or(false))
        return {Kind::failed, "GPU " + bus_id +
                                  " is in persistence mode, which blocks a reset (turn it off first in a reset_command "
                                  "script, or set [cure] reset_blocked_by_persistence = false if this driver resets anyway)"};
    }
    std::vector<std::string> argv;
    for (const auto& word : config.reset_command) argv.push_back(expand(word, bus_id, node));
    auto r = run_process(argv, std::chrono::duration_cast<std::chrono::milliseconds>(config.reset_timeout), 16 * 1024);
    if (!r) return {Kind::failed, "GPU " + bus_id + ": reset did not run: " + sanitize(r.error(), 200)};
    if (r->timed_out)
      return {Kind::failed, "GPU " + bus_id + ": reset did not finish within " + std::to_string(config.reset_timeout.count()) + " s"};
    if (r->signaled || r->exit_code != 0) {
      const std::string what = first_output_line(*r, /*stderr_first=*/true);
      return {Kind::failed, "GPU " + bus_id + ": reset " +
                                (r->signaled ? std::string("killed by a signal") : "failed (exit " + std::to_string(r->exit_code) + ")") +
                                (what.empty() ? "" : ": " + what)};
    }
    done.push_back(bus_id);
  }
  std::string list;
  for (const auto& g : done) list += (list.empty() ? "" : ", ") + g;
  return {Kind::reset, "GPU " + list + " reset"};
}

}  // namespace ar::healthd
