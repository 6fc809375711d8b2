// Resets the GPUs a fault is on ([cure] reset_command, default `nvidia-smi --gpu-reset -i %g`): argv,
// no shell, with a deadline. A reset needs the GPU idle: processes holding it block it (the caller
// waits for them, up to reset_wait_s), and so does persistence mode where the driver refuses a
// reset with it on (said so; the chain goes on). Runs on a thread of its own (slurm_actions polls it).
// A reset command that is not there (no nvidia-smi on the node, a path that is not executable) is not
// a reset that failed: the step cannot run here (cannot_run), and the node waits for an admin.
#pragma once

#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "actions/background_runs.hpp"
#include "collectors/gpu_snapshot.hpp"
#include "config/cure_config.hpp"

namespace ar::healthd {

struct GpuResetOutcome {
  enum class Kind { reset, blocked, failed, cannot_run } kind = Kind::failed;
  std::string message;  // one line: what was reset, what blocks it, or why it failed or cannot run
};

// Why a cure step cannot run on this node at all (its means are missing), as the log says it
// (`why`) and as the drain reason says what the node needs (`needs`, short: reasons are bounded).
struct CannotRun {
  std::string why;
  std::string needs;
};

// Whether `config`'s reset command can run here: its program was found when the config was loaded
// (an absolute path) and is executable now. Nothing: it can.
std::optional<CannotRun> reset_cannot_run(const CureConfig& config);

// What NVML says of one GPU now, by PCI bus id (either form): its bus id as NVML gives it, its
// persistence mode and the processes using it. Empty function: not looked at.
using GpuInspector = std::function<std::expected<GpuSnapshot, std::string>(const std::string& bus_id)>;

// Resets `gpus` (PCI bus ids) of `node` one after the other; the first that fails or is blocked ends it.
GpuResetOutcome reset_gpus(const CureConfig& config, const std::vector<std::string>& gpus, const std::string& node,
                           const GpuInspector& inspect);

// How slurm_actions resets GPUs: reset_gpus with the node's inspector, or a test's fake.
using GpuResetter = std::function<GpuResetOutcome(const CureConfig& config, const std::vector<std::string>& gpus,
                                                  const std::string& node)>;

// What the reset executor (reset_executor.cpp) uses: how GPUs are reset, what a reset that may have
// cured fault `code` asks of the engine (the checks forget what they remember of it), and the resets
// running on threads of their own, by journal entry.
struct GpuResets {
  GpuResetter reset;                                // empty: reset_gpus without looking at NVML
  std::function<void(const std::string& code)> cured;  // empty: nothing to forget
  BackgroundRuns<GpuResetOutcome> runs{
      [](const std::string& what) { return GpuResetOutcome{GpuResetOutcome::Kind::failed, what}; }};
};

}  // namespace ar::healthd
