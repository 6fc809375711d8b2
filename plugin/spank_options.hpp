// The plugin's options (--auto-resume and its companions) as Slurm sees them: their help text, and
// callbacks that parse each value (options.hpp) into the process's state. In every context: sbatch,
// salloc and srun read them from the command line, slurmstepd from what Slurm forwarded.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace ar::plugin {

// Registers every option with Slurm; a registration Slurm refuses is logged, never fatal.
void register_options(spank_t sp);

}  // namespace ar::plugin
