// What one process of the plugin holds between Slurm's calls into it. slurmstepd runs one process
// per step, so in the remote context this is "per step"; srun (local) and sbatch/salloc (allocator)
// are one process each too. The entry points (spank_plugin.cpp) and the context modules
// (remote_context, local_context, spank_options) share it; nothing else does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "plugstack_args.hpp"
#include "slurm_job.hpp"
#include "step_reporter.hpp"

namespace ar::plugin {

inline constexpr const char* kPrefix = "auto-resume: ";

struct PluginState {
  bool configured = false;  // plugstack arguments parsed without error
  PlugstackArgs args;

  // The user's options (spank_options.cpp), in every context.
  std::optional<bool> auto_resume;     // set by the option callback when the user gave the option
  std::string checkpoint_dir;          // --auto-resume-checkpoint-dir
  std::optional<std::uint32_t> max_resumes;  // --auto-resume-max
  std::string heartbeat;               // --auto-resume-heartbeat, or the directory of --auto-resume-heartbeat-dir
  bool heartbeat_per_rank = false;     // --auto-resume-heartbeat-dir: one file per task under `heartbeat`
  StallTimes stall;                    // --auto-resume-stall (or its defaults)

  // The step, once known: slurmstepd's (remote) or srun's own (local).
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;

  // slurmstepd (remote context): the step as reported to healthd.
  std::uint32_t reported_restart_count = 0;
  // The job's record, read from slurmctld as the step started (slurmstepd, root); the task inherits
  // it. Empty when slurmctld did not answer, or for a step that needs none (see remote_context.cpp).
  std::optional<JobFacts> job;
  std::string node;
  std::string socket_path;
  std::unique_ptr<StepReporter> reporter;

  // srun (local context): what a re-run of its step needs, kept from its start.
  bool local_step_known = false;       // job_id and step_id hold this srun's step
  std::vector<std::string> start_env;  // the environment srun started with, before srun changed it
  std::vector<int> ignored_signals;    // the signals srun's parent left ignored (kept across the exec)
};

// This process's state.
PluginState& state();

// Forgets everything, as a fresh process would start: for the hook tests, which play several
// processes' lives in one.
void reset_state();

// slurm_error with the plugin's prefix: in the job's output (task), slurmd's log or srun's stderr.
void log_error(const std::string& what);

}  // namespace ar::plugin
