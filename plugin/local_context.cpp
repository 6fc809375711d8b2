#include "local_context.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "auto_resume/job_comment.hpp"
#include "auto_resume/protocol.hpp"
#include "plugin_state.hpp"
#include "slurm_job.hpp"
#include "spank_handle.hpp"
#include "step_rerun.hpp"

extern char** environ;

namespace ar::plugin::local {

// srun, at its start (slurm_spank_init runs before srun reads its options or sets any variable):
// what a re-run must start from.
void srun_start() {
  auto& s = state();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) s.start_env.emplace_back(*e);
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) s.ignored_signals.push_back(sig);
  }
}

namespace {

std::string start_env_value(const std::string& name) {
  const std::string prefix = name + "=";
  for (const auto& e : state().start_env)
    if (e.rfind(prefix, 0) == 0) return e.substr(prefix.size());
  return {};
}

}  // namespace

void step_known(spank_t sp) {
  auto& s = state();
  auto ids = SpankHandle(sp).step_ids();
  if (!ids) return;
  s.job_id = ids->job;
  s.step_id = ids->step;
  s.local_step_known = true;
}

// srun, once its step has ended: when healthd took a faulty node out of the job and asked for this
// step to run again (its line in the admin comment names this step), the same srun is run again, in
// this process, on the nodes left. One slurmctld read per auto-resume srun of a batch script.
void rerun_step_if_asked() {
  auto& s = state();
  if (!s.configured || !s.auto_resume.value_or(false) || !s.local_step_known) return;
  if (!ar::proto::is_user_step(s.step_id) || start_env_value("ENVIRONMENT") != "BATCH") return;
  const auto job = read_job(s.job_id);
  if (!job) return;  // no answer: no re-run
  const std::string& nodes = job->nodes;
  const std::uint32_t num_nodes = job->num_nodes;
  const auto line = ar::parse_attempt_comment(ar::auto_resume_line(job->admin_comment));
  if (!ar::asks_step_rerun(line, s.step_id, job->restart_count) || nodes.empty()) return;

  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  const auto argv = split_cmdline(std::string(std::istreambuf_iterator<char>(cmdline), {}));
  if (argv.empty()) {
    log_error("cannot read this srun's command line; step " + std::to_string(s.step_id) + " is not run again");
    return;
  }
  const auto env = rerun_environment(s.start_env, *line, nodes, num_nodes);
  const std::string say = std::string(kPrefix) + "step " + std::to_string(s.job_id) + "." + std::to_string(s.step_id) +
                          " runs again on " + nodes + " (re-run " + std::to_string(line->reruns) + " of the job) after " +
                          line->code + " on " + line->node + "\n";
  (void)!write(STDERR_FILENO, say.data(), say.size());

  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  // The new srun starts as this one did: output flushed, no signal blocked, ignored only what its
  // parent ignored, and none of this srun's descriptors (sockets to the old step) but stdio.
  std::fflush(nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    const bool ignored = std::find(s.ignored_signals.begin(), s.ignored_signals.end(), sig) != s.ignored_signals.end();
    signal(sig, ignored ? SIG_IGN : SIG_DFL);
  }
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  execve("/proc/self/exe", cargv.data(), cenv.data());
  log_error(std::string("cannot run srun again (") + std::strerror(errno) + "); step " + std::to_string(s.step_id) +
            " is not run again");
}

}  // namespace ar::plugin::local
