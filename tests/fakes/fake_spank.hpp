// A fake SPANK: what slurmstepd, srun and sbatch give a plugin (spank_get_item, spank_getenv,
// spank_setenv, spank_unsetenv, spank_option_register, spank_context, slurm_error), and what
// slurmctld answers the plugin's one read of its job (ar::plugin::read_job, plugin/slurm_job.hpp).
// Linked into unit_tests with the plugin's own hooks (plugin/spank_plugin.cpp and its context
// modules), so tests call slurm_spank_* in Slurm's order and see what the plugin asked of Slurm, what
// it set in the job's environment, what it logged and what healthd recorded.
//
// One fake per process, as one slurmstepd runs one step: a test resets it (and the plugin's state)
// before playing a process's life.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

#include "slurm_job.hpp"

namespace ar::test {

struct FakeSpank {
  spank_context_t context = S_CTX_REMOTE;
  // spank_get_item's answers, by item: S_JOB_ID, S_JOB_STEPID, S_JOB_UID, S_JOB_NODEID, S_TASK_ID,
  // S_TASK_GLOBAL_ID, S_TASK_EXIT_STATUS, S_SLURM_RESTART_COUNT. An item not here is "not available".
  std::map<spank_item_t, std::int64_t> items;
  // The job's environment as spank_getenv reads it and spank_setenv/unsetenv change it (remote
  // context: the task's environment).
  std::map<std::string, std::string> env;
  std::vector<spank_option*> options;   // as registered, in order
  std::vector<std::string> errors;      // slurm_error's lines
  // slurmctld's records, by job id; a job not here: slurmctld did not answer.
  std::map<std::uint32_t, plugin::JobFacts> jobs;
  int job_reads = 0;

  // What Slurm does with an option it finds on the command line (remote: forwarded by srun/sbatch):
  // calls the registered callback. Answers its return value; -100 when no option has that name.
  int give_option(const std::string& name, const char* value, bool remote);
  std::optional<std::string> env_value(const std::string& name) const;
};

// The fake every spank_* call of this process reads, reset to `fresh` (with the plugin's state).
FakeSpank& fake_spank();
void reset_fake_spank(FakeSpank fresh);
// The handle Slurm would pass to the hooks.
spank_t fake_spank_handle();

}  // namespace ar::test
