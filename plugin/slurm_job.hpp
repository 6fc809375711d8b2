// What the plugin reads of its own job from slurmctld: the job record, which the job's user cannot
// change. The job's environment (SLURM_RESTART_COUNT, SLURM_STEP_NODELIST, ...) is the user's to set,
// so nothing that decides what healthd records or where root's slurmstepd connects comes from it.
//
// One read per step at most, made by slurmstepd (root) as the step starts, when slurmctld has just
// answered the step's launch; the task inherits the answer (it is forked after), so the batch
// script's warnings and AUTO_RESUME_LAST_* cost no second read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ar::plugin {

struct JobFacts {
  std::uint32_t restart_count = 0;  // Slurm's count of requeues: 0 on the first attempt
  std::string batch_host;           // the node of the batch script ("" for a job without one)
  std::string nodes;                // the job's nodes, as a host list expression ("n[1-3]")
  std::uint32_t num_nodes = 0;
  std::string admin_comment;
  bool batch = true;                // a batch job (sbatch), which Slurm can requeue
  bool requeue = true;              // the job allows requeue
};

// The job's record from slurmctld (this cluster's only), or nullopt when slurmctld did not answer.
std::optional<JobFacts> read_job(std::uint32_t job_id);

}  // namespace ar::plugin
