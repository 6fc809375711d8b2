// Step re-run inside the allocation (step_rerun.cpp): the requeue executor's first choice for a fault
// under an auto-resume srun step of a batch job.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>

#include "actions/executor.hpp"

namespace ar::healthd {

// The job's step re-runs so far, from healthd's line in its admin comment: they count against the
// resume cap with its requeues.
std::uint32_t step_reruns_so_far(const JobInfo& job);

// Re-runs the failed step of `e` in the job's allocation, in place of a requeue. Nothing: done (the
// step runs again, or another node's healthd re-ran it and this node has left); a reason: requeue
// instead (empty when there is nothing to say); an error: Slurm failed, try again.
std::expected<std::optional<std::string>, std::string> rerun_step(const ExecutorServices& services, const JournalEntry& e,
                                                                  const JobInfo& job, WallTime now);

}  // namespace ar::healthd
