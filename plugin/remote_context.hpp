// slurmstepd (SPANK's remote context), one process per step on each of its nodes: tells healthd the
// step's life (start, each task's exit, end) and gives each task the variables the training code
// reads. As root, but for task_init, which runs in the forked task as the job's user.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace ar::plugin::remote {

// slurm_spank_init_post_opt: reads the job's record and reports the step's start.
void step_start(spank_t sp);

// slurm_spank_task_init, in the task just before exec: AUTO_RESUME*, the checkpoint, the attempt, the
// last attempt's reason; a start reported with a stale restart count is corrected.
void task_init(spank_t sp);

// slurm_spank_task_post_fork (slurmstepd, root): a task's process, for steps with per-rank heartbeats.
void task_started(spank_t sp);
// slurm_spank_task_exit: one task's wait status.
void task_exit(spank_t sp);

// slurm_spank_exit: the step has ended.
void step_end();

}  // namespace ar::plugin::remote
