// srun (SPANK's local context), as the user: keeps what a re-run of its step needs, and once the
// step has ended runs the same srun again when healthd took a faulty node out of the job and asked
// for this step to run again (step re-runs, ARCHITECTURE.md).
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace ar::plugin::local {

// slurm_spank_init (before srun reads its options or sets any variable): the environment and the
// ignored signals srun started with.
void srun_start();

// slurm_spank_local_user_init: which step a re-run would repeat.
void step_known(spank_t sp);

// slurm_spank_exit: execs srun again when healthd's line in the job's admin comment asks for this
// step; returns (doing nothing) otherwise, or when the exec fails.
void rerun_step_if_asked();

}  // namespace ar::plugin::local
