// Slurm's own records (slurm.h) to the typed facts healthd acts on. Kept apart from the client so
// the conversion is unit-tested on records built by hand: a reason or comment holding
// "State=IDLE" or "JobState=PENDING Restarts=9" is text, and stays text.
#pragma once

#include <slurm/slurm.h>

#include "slurm_client.hpp"

namespace ar::healthd {

NodeInfo to_node_info(const node_info_t& node);
JobInfo to_job_info(const slurm_job_info_t& job);
StepInfo to_step_info(const job_step_info_t& step);
// A Slurm host list ("n[1-3],gpu7") one name per node, through libslurm's own parser.
std::vector<std::string> expand_hostlist(const std::string& list);

}  // namespace ar::healthd
