// The SPANK entry points of auto_resume.so, and nothing else: each hook switches on the context and
// hands over to that context's module (remote_context: slurmstepd; local_context: srun;
// spank_options: every context), as pyxis does. tests/unit/plugin_hooks_test.cpp calls these same
// hooks in Slurm's order against a fake SPANK (tests/fakes/fake_spank.cpp).
//
// Rules kept here: no exception crosses the C boundary (every hook catches everything); no hook ever
// fails a job because of the daemon; every message starts with "auto-resume: ".
#include <string>
#include <vector>

// spank.h declares the slurm_spank_* hooks outside its own extern "C" block: include it as C.
extern "C" {
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
}

#include "local_context.hpp"
#include "plugin_state.hpp"
#include "plugstack_args.hpp"
#include "remote_context.hpp"
#include "spank_options.hpp"

extern "C" {
// SPANK_PLUGIN(auto_resume, 1) spelled out, so the symbols get C linkage and default visibility.
extern const char plugin_name[] __attribute__((visibility("default")));
extern const char plugin_type[] __attribute__((visibility("default")));
extern const unsigned int plugin_version __attribute__((visibility("default")));
extern const unsigned int spank_plugin_version __attribute__((visibility("default")));
const char plugin_name[] = "auto_resume";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
const unsigned int spank_plugin_version = 1;

// Slurm 25.05+: what Slurm does when slurm_spank_init of a `required` plugin fails. Ours never fails
// (every hook returns 0 but an option callback refusing a bad value), and this says so to Slurm as
// well: should it ever fail, the job fails, not the node. The default, ESPANK_NODE_FAILURE, would
// drain every node the same broken install is on, which for a plugin present on every node is the
// whole cluster: a false drain is the one thing this product must never cause.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
extern int slurm_spank_init_failure_mode __attribute__((visibility("default")));
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif
}

namespace local = ar::plugin::local;
namespace remote = ar::plugin::remote;
using ar::plugin::log_error;
using ar::plugin::parse_plugstack_args;
using ar::plugin::register_options;
using ar::plugin::state;

extern "C" {

__attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac, char** av) {
  try {
    auto& s = state();
    std::vector<std::string> words(av, av + ac);
    auto args = parse_plugstack_args(words);
    if (args) {
      s.args = *args;
      s.configured = true;
    } else {
      // A misconfigured plugstack line is loud, but must not stop every job on the cluster:
      // the option stays registered (scripts using it keep working) and nothing is reported.
      log_error("plugstack.conf: " + args.error() + "; the plugin is disabled");
    }
    register_options(sp);
    if (spank_context() == S_CTX_LOCAL && s.configured) local::srun_start();
  } catch (...) {
    slurm_error("auto-resume: init: unexpected error; the plugin is disabled");
    state().configured = false;
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE && state().configured) remote::step_start(sp);
  } catch (...) {
    slurm_error("auto-resume: step start: unexpected error");
  }
  return 0;
}

// srun, once it has its step: which step a re-run would repeat.
__attribute__((visibility("default"))) int slurm_spank_local_user_init(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_LOCAL && state().configured) local::step_known(sp);
  } catch (...) {
    slurm_error("auto-resume: srun init: unexpected error");
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_init(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE && state().configured) remote::task_init(sp);
  } catch (...) {
    slurm_error("auto-resume: task init: unexpected error");
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_post_fork(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE) remote::task_started(sp);
  } catch (...) {
    slurm_error("auto-resume: task post fork: unexpected error");
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_exit(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE) remote::task_exit(sp);
  } catch (...) {
    slurm_error("auto-resume: task exit: unexpected error");
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_exit(spank_t, int, char**) {
  try {
    if (spank_context() == S_CTX_LOCAL) local::rerun_step_if_asked();
    else if (spank_context() == S_CTX_REMOTE) remote::step_end();
  } catch (...) {
    slurm_error("auto-resume: step end: unexpected error");
  }
  return 0;
}

}  // extern "C"
