// The srun side of a step re-run inside the allocation (healthd's side: healthd/actions/step_rerun.cpp).
// When an auto-resume srun's step has ended, healthd's line in the job's admin comment says whether
// that step is to run again on the nodes left in the job; if so, the plugin runs the same srun
// again, with the environment it started with brought up to date. Plain C++ with no Slurm symbols,
// unit-tested in tests/unit/step_rerun_plan_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auto_resume/job_comment.hpp"

namespace ar::plugin {

// The job's step re-runs so far, handed from a re-run srun to its tasks (AUTO_RESUME_ATTEMPT counts them).
inline constexpr const char* kStepRerunsEnv = "AUTO_RESUME_STEP_RERUNS";

// The environment the re-run starts with: `env` (this srun's at its start, "NAME=value" each) with
// the job's node list and count set to what is left of the allocation (srun reads SLURM_NNODES as
// its -N, and warns when SLURM_JOB_NUM_NODES disagrees with the allocation), and why the last
// attempt ended in the variables the training code reads.
std::vector<std::string> rerun_environment(std::vector<std::string> env, const AttemptEnd& line,
                                           const std::string& node_list, std::uint32_t num_nodes);

// /proc/self/cmdline's text as argv (NUL-separated, the last one terminated).
std::vector<std::string> split_cmdline(const std::string& raw);

// A count from the environment: digits only, else nothing.
std::optional<std::uint32_t> parse_count(const char* value);

}  // namespace ar::plugin
