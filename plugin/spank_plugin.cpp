// The SPANK entry points of auto_resume.so, and nothing else: each hook switches on the context and
// hands over to plain C++ (options, plugstack_args, step_reporter) that is unit-tested without Slurm.
//
// Rules kept here: no exception crosses the C boundary (every hook catches everything); no hook ever
// fails a job because of the daemon; every message starts with "auto-resume: ".
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// spank.h declares the slurm_spank_* hooks outside its own extern "C" block: include it as C.
extern "C" {
#include <slurm/spank.h>
}

#include "auto_resume/job_comment.hpp"
#include "auto_resume/protocol.hpp"
#include "checkpoint.hpp"
#include "options.hpp"
#include "plugstack_args.hpp"
#include "slurm_job.hpp"
#include "spank_handle.hpp"
#include "step_reporter.hpp"
#include "step_rerun.hpp"

extern char** environ;

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

namespace {

using ar::plugin::SpankHandle;
using ar::plugin::StepReporter;

constexpr const char* kPrefix = "auto-resume: ";

// State of this process. slurmstepd runs one process per step, so "per process" is "per step".
struct PluginState {
  bool configured = false;           // plugstack arguments parsed without error
  ar::plugin::PlugstackArgs args;
  std::optional<bool> auto_resume;   // set by the option callback when the user gave the option
  std::string checkpoint_dir;        // --auto-resume-checkpoint-dir
  std::optional<std::uint32_t> max_resumes;  // --auto-resume-max
  std::string heartbeat;                     // --auto-resume-heartbeat
  ar::plugin::StallTimes stall;              // --auto-resume-stall (or its defaults)
  std::uint32_t reported_restart_count = 0;
  // The job's record, read from slurmctld as the step started (slurmstepd, root); the task inherits
  // it. Empty when slurmctld did not answer, or for a step that needs none (see start_step).
  std::optional<ar::plugin::JobFacts> job;
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string node;
  std::string socket_path;
  std::unique_ptr<StepReporter> reporter;
  // srun (local context): what a re-run of its step needs, kept from its start.
  bool local_step_known = false;       // job_id and step_id hold this srun's step
  std::vector<std::string> start_env;  // the environment srun started with, before srun changed it
  std::vector<int> ignored_signals;    // the signals srun's parent left ignored (kept across the exec)
};

PluginState& state() {
  static PluginState s;
  return s;
}

void log_error(const std::string& what) { slurm_error("%s%s", kPrefix, what.c_str()); }

// Tells a value Slurm forwarded from one the user typed. In slurmstepd every value was forwarded. In
// srun, a value equal to the allocation's forwarded option variable came from that variable (Slurm
// processes it before the command line). The one ambiguity left: a user typing exactly the forwarded
// text on srun's command line inside such a job, which is then read as the bare flag.
ar::plugin::ValueSource value_source(int remote, const char* optarg) {
  using ar::plugin::ValueSource;
  if (remote) return ValueSource::forwarded_by_slurm;
  const char* env = std::getenv(ar::plugin::kForwardedOptionEnv);
  if (optarg != nullptr && env != nullptr && std::string_view(optarg) == env) return ValueSource::forwarded_by_slurm;
  return ValueSource::command_line;
}

// Every option callback: parse, say what is wrong (which makes sbatch/srun/salloc exit non-zero
// before submitting), or keep the value. Nothing may throw into Slurm.
template <typename Parsed, typename Store>
int take_option(Parsed parsed, Store store) {
  try {
    auto v = parsed();
    if (!v) {
      log_error(v.error());
      return -1;
    }
    store(*v);
    return 0;
  } catch (...) {
    return -1;
  }
}

int option_callback(int /*val*/, const char* optarg, int remote) {
  return take_option([&] { return ar::plugin::parse_auto_resume_value(optarg, value_source(remote, optarg)); },
                     [](bool v) { state().auto_resume = v; });
}

int checkpoint_dir_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return ar::plugin::parse_checkpoint_dir(optarg); },
                     [](const std::string& v) { state().checkpoint_dir = v; });
}

int max_resumes_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return ar::plugin::parse_max_resumes(optarg); },
                     [](std::uint32_t v) { state().max_resumes = v; });
}

int heartbeat_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return ar::plugin::parse_heartbeat_path(optarg); },
                     [](const std::string& v) { state().heartbeat = v; });
}

int stall_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return ar::plugin::parse_stall(optarg); },
                     [](ar::plugin::StallTimes v) { state().stall = v; });
}

// Slurm keeps a pointer to the options, so they must outlive the call.
struct spank_option heartbeat_option = {
    const_cast<char*>(ar::plugin::kHeartbeatOptionName), const_cast<char*>("PATH"),
    const_cast<char*>("A file (or a directory, by its newest entry) this job's training loop keeps touching; when it "
                      "stands still for --auto-resume-stall, the job's nodes are checked and the job is resumed."),
    1, 0, heartbeat_callback};

struct spank_option stall_option = {
    const_cast<char*>(ar::plugin::kStallOptionName), const_cast<char*>("SECONDS[,FIRST]"),
    const_cast<char*>("How long the heartbeat may stand still (default 300), and before its first beat (default "
                      "the larger of SECONDS and 1800)."),
    1, 0, stall_callback};

struct spank_option max_resumes_option = {
    const_cast<char*>(ar::plugin::kMaxResumesOptionName), const_cast<char*>("N"),
    const_cast<char*>("Resume this job at most N times (the cluster's own cap still applies)."), 1, 0,
    max_resumes_callback};

struct spank_option checkpoint_dir_option = {
    const_cast<char*>(ar::plugin::kCheckpointOptionName), const_cast<char*>("DIR"),
    const_cast<char*>("Where this job writes checkpoints (one subdirectory each, complete once it holds a file "
                      "named COMPLETE). Each step gets the newest complete one in $AUTO_RESUME_CHECKPOINT."),
    1, 0, checkpoint_dir_callback};

struct spank_option auto_resume_option = {
    const_cast<char*>(ar::plugin::kOptionName), const_cast<char*>("[0|1]"),
    const_cast<char*>("Requeue and restart this job (or step) from its last checkpoint when a node it runs on "
                      "is found faulty. --auto-resume alone means 1; 0 opts a step out."),
    2, 0, option_callback};

bool is_reported_step(std::uint32_t step_id) {
  // The extern step holds no user tasks; every other step (batch script, srun steps) is reported.
  return step_id != ar::proto::kExternStep;
}

// The step-start message of this process's step, as recorded by start_step.
ar::proto::StepStart start_message(const SpankHandle& h, std::uint32_t restart_count) {
  const auto& s = state();
  ar::proto::StepStart msg;
  msg.job_id = s.job_id;
  msg.step_id = s.step_id;
  msg.node = s.node;
  msg.uid = h.uid().value_or(0);
  msg.auto_resume = s.auto_resume.value_or(false);
  msg.restart_count = restart_count;
  msg.max_resumes = s.max_resumes;
  if (!s.heartbeat.empty()) msg.heartbeat = ar::proto::Heartbeat{s.heartbeat, s.stall.stall_s, s.stall.first_beat_s};
  return msg;
}

// This node's name, from Slurm. The batch script's node is the job record's batch host. An srun
// step's is this node's entry of the step's node list, which comes through the job's environment
// (the user can set it): it is taken only when it is a node of the job's record. Without a record
// (a step that needs none, or slurmctld not answering) the list's entry is taken as it is, and the
// socket template refuses any name that could lead the path elsewhere.
std::optional<std::string> node_of_step(const SpankHandle& h, std::uint32_t job_id, std::uint32_t step_id,
                                        const std::optional<ar::plugin::JobFacts>& job) {
  const bool batch_step = step_id == ar::proto::kBatchStep;
  if (batch_step && job && !job->batch_host.empty()) return job->batch_host;
  auto name = h.node_name_from_env(batch_step);
  if (!name || !job) return name;
  if (!ar::plugin::host_list_holds(job->nodes, *name)) {
    log_error("the step's node list names " + ar::proto::quote_client_text(*name) + ", which is not a node of job " +
              std::to_string(job_id) + " (" + job->nodes + ")");
    return std::nullopt;
  }
  return name;
}

void start_step(spank_t sp) {
  auto& s = state();
  SpankHandle h(sp);
  auto job = h.u32(S_JOB_ID);
  auto step = h.u32(S_JOB_STEPID);
  if (!job || !step) {
    log_error("cannot read the job or step id; this step is not reported");
    return;
  }
  if (!is_reported_step(*step)) return;
  // Slurm's own record of the job: the restart count (S_SLURM_RESTART_COUNT reads 0 on 22.05,
  // and the environment's SLURM_RESTART_COUNT is the user's to set) and the node names. Read for the
  // steps whose attempt matters to healthd: every auto-resume step, and the batch script (whose task
  // also needs the requeue flag and the admin comment).
  if (*step == ar::proto::kBatchStep || s.auto_resume.value_or(false)) {
    s.job = ar::plugin::read_job(*job);
    if (!s.job) log_error("cannot read job " + std::to_string(*job) + " from slurmctld; its restart count is taken as " +
                          std::to_string(h.u32(S_SLURM_RESTART_COUNT).value_or(0)));
  }
  auto node = node_of_step(h, *job, *step, s.job);
  if (!node) {
    log_error("cannot find this node's name in the step's node list; this step is not reported");
    return;
  }
  auto path = ar::plugin::expand_socket_template(s.args.socket_template, *node);
  if (!path) {
    log_error(path.error() + "; this step is not reported");
    return;
  }
  s.job_id = *job;
  s.step_id = *step;
  s.node = *node;
  s.socket_path = *path;
  s.reporter = std::make_unique<StepReporter>(*path, s.args.timeout, s.args.step_budget, log_error);

  auto msg = start_message(h, s.job ? s.job->restart_count : h.u32(S_SLURM_RESTART_COUNT).value_or(0));
  s.reported_restart_count = msg.restart_count;
  s.reporter->report(msg);
}

// Runs in the task as the job's user, so the checkpoint directory is read with the user's rights, as
// the training code will read it.
void export_checkpoint(spank_t sp) {
  auto& s = state();
  if (s.checkpoint_dir.empty()) return;
  spank_setenv(sp, "AUTO_RESUME_CHECKPOINT_DIR", s.checkpoint_dir.c_str(), 1);
  std::error_code ec;
  if (!std::filesystem::exists(s.checkpoint_dir, ec)) return;  // a first attempt has written none yet
  auto newest = ar::plugin::newest_complete_checkpoint(s.checkpoint_dir);
  if (!newest) {
    log_error(newest.error());
    return;
  }
  if (*newest) spank_setenv(sp, "AUTO_RESUME_CHECKPOINT", (*newest)->c_str(), 1);
  else spank_unsetenv(sp, "AUTO_RESUME_CHECKPOINT");
}

// Why the last attempt ended, from the line healthd left in the job's admin comment when it requeued
// it (the user's own --comment is never touched), for the batch script's task of a restarted job
// (srun steps inherit the variables from the script). Answers the job's step re-runs so far (0 when
// unknown).
std::uint32_t export_last_attempt(spank_t sp, const ar::plugin::JobFacts& job) {
  auto last = ar::parse_attempt_comment(ar::auto_resume_line(job.admin_comment));
  if (!last) return 0;  // requeued by someone else (an admin, Slurm itself): nothing of ours to pass on
  spank_setenv(sp, "AUTO_RESUME_LAST_CODE", last->code.c_str(), 1);
  spank_setenv(sp, "AUTO_RESUME_LAST_NODE", last->node.c_str(), 1);
  spank_setenv(sp, "AUTO_RESUME_LAST_REASON", (last->code + " on " + last->node + ": " + last->message).c_str(), 1);
  spank_setenv(sp, ar::plugin::kStepRerunsEnv, std::to_string(last->reruns).c_str(), 1);
  return last->reruns;
}

// A job asked auto-resume but cannot be requeued (sbatch --no-requeue, JobRequeue=0 in slurm.conf
// without --requeue, or not a batch job): at a fault healthd could only drain the node, and Slurm
// would refuse the requeue. Said at once, in the job's own output (this is the task: its stderr is
// the job's), and in AUTO_RESUME_REQUEUE=0 for the training code: in the first attempt's batch
// script, or in step 0 of a job that has no batch script, from the record start_step read.
void warn_if_not_requeueable(spank_t sp, const ar::plugin::JobFacts& job, std::uint32_t job_id, std::uint32_t step_id) {
  // Steps of a batch job inherit ENVIRONMENT=BATCH from its script, which has spoken already.
  char env[16] = {0};
  if (step_id != ar::proto::kBatchStep && spank_getenv(sp, "ENVIRONMENT", env, sizeof env) == ESPANK_SUCCESS &&
      std::string(env) == "BATCH")
    return;
  std::string why;
  if (!job.batch) why = "it is not a batch job (salloc/srun): Slurm requeues batch jobs only; submit it with sbatch";
  else if (!job.requeue)
    why = "it does not allow requeue (sbatch --no-requeue, or JobRequeue=0 in slurm.conf without --requeue); "
          "submit it with --requeue";
  if (step_id != ar::proto::kBatchStep && job.batch) return;  // the batch script has said it already
  if (why.empty()) return;
  spank_setenv(sp, "AUTO_RESUME_REQUEUE", "0", 1);
  const std::string line = std::string(kPrefix) + "job " + std::to_string(job_id) +
                           " cannot be resumed after a fault: " + why + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

// In the task, just before exec (as the job's user): the variables the training code reads. The
// attempt is counted from the job's record read as the step started; where slurmctld did not answer
// then, the task asks once more, and a batch step reported with a stale count is corrected (healthd
// takes a correction from the job's owner for that job only).
void prepare_task(spank_t sp) {
  auto& s = state();
  SpankHandle h(sp);
  const bool reads_job = s.step_id == ar::proto::kBatchStep || s.auto_resume.value_or(false);
  if (!s.job && reads_job) s.job = ar::plugin::read_job(s.job_id);
  const std::uint32_t restart_count = s.job ? s.job->restart_count : s.reported_restart_count;
  spank_setenv(sp, "AUTO_RESUME", s.auto_resume.value_or(false) ? "1" : "0", 1);
  export_checkpoint(sp);
  // Step re-runs inside the allocation are attempts too: a re-run srun carries their number, and a
  // restarted batch script reads it from healthd's line.
  std::uint32_t reruns = 0;
  if (auto env = h.job_env(ar::plugin::kStepRerunsEnv))
    reruns = ar::plugin::parse_count(env->c_str()).value_or(0);
  if (s.job && restart_count > 0 && s.step_id == ar::proto::kBatchStep) reruns = export_last_attempt(sp, *s.job);
  spank_setenv(sp, "AUTO_RESUME_ATTEMPT", std::to_string(restart_count + reruns + 1).c_str(), 1);
  if (s.job && restart_count == 0 && s.auto_resume.value_or(false) &&
      (s.step_id == ar::proto::kBatchStep || s.step_id == 0) && h.u32(S_TASK_ID).value_or(1) == 0)
    warn_if_not_requeueable(sp, *s.job, s.job_id, s.step_id);

  if (!s.reporter || s.reporter->disabled() || restart_count <= s.reported_restart_count) return;
  if (h.u32(S_TASK_ID).value_or(1) != 0) return;  // one correction per step is enough
  // This process is the forked task: it must not touch the parent's connection. A fresh one, bounded
  // by the same timeout, carries the corrected start.
  auto msg = start_message(h, restart_count);
  if (auto r = ar::call(s.socket_path, ar::proto::to_json(ar::proto::Request{msg}), s.args.timeout); !r)
    log_error("healthd at " + s.socket_path + " not reachable for the restart count (" + r.error() + ")");
}

// srun, at its start (slurm_spank_init runs before srun reads its options or sets any variable):
// what a re-run must start from.
void remember_srun_start() {
  auto& s = state();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) s.start_env.emplace_back(*e);
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) s.ignored_signals.push_back(sig);
  }
}

std::string start_env_value(const std::string& name) {
  const std::string prefix = name + "=";
  for (const auto& e : state().start_env)
    if (e.rfind(prefix, 0) == 0) return e.substr(prefix.size());
  return {};
}

// srun, once its step has ended: when healthd took a faulty node out of the job and asked for this
// step to run again (its line in the admin comment names this step), the same srun is run again, in
// this process, on the nodes left. One slurmctld read per auto-resume srun of a batch script.
void rerun_step_if_asked() {
  auto& s = state();
  if (!s.configured || !s.auto_resume.value_or(false) || !s.local_step_known) return;
  if (!ar::proto::is_user_step(s.step_id) || start_env_value("ENVIRONMENT") != "BATCH") return;
  const auto job = ar::plugin::read_job(s.job_id);
  if (!job) return;  // no answer: no re-run
  const std::string& nodes = job->nodes;
  const std::uint32_t num_nodes = job->num_nodes;
  const auto line = ar::parse_attempt_comment(ar::auto_resume_line(job->admin_comment));
  if (!ar::asks_step_rerun(line, s.step_id, job->restart_count) || nodes.empty()) return;

  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  const auto argv = ar::plugin::split_cmdline(std::string(std::istreambuf_iterator<char>(cmdline), {}));
  if (argv.empty()) {
    log_error("cannot read this srun's command line; step " + std::to_string(s.step_id) + " is not run again");
    return;
  }
  const auto env = ar::plugin::rerun_environment(s.start_env, *line, nodes, num_nodes);
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

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac, char** av) {
  try {
    auto& s = state();
    std::vector<std::string> words(av, av + ac);
    auto args = ar::plugin::parse_plugstack_args(words);
    if (args) {
      s.args = *args;
      s.configured = true;
    } else {
      // A misconfigured plugstack line is loud, but must not stop every job on the cluster:
      // the option stays registered (scripts using it keep working) and nothing is reported.
      log_error("plugstack.conf: " + args.error() + "; the plugin is disabled");
    }
    for (auto* opt : {&auto_resume_option, &checkpoint_dir_option, &max_resumes_option, &heartbeat_option, &stall_option})
      if (spank_option_register(sp, opt) != ESPANK_SUCCESS) log_error(std::string("cannot register --") + opt->name);
    if (spank_context() == S_CTX_LOCAL && s.configured) remember_srun_start();
  } catch (...) {
    slurm_error("auto-resume: init: unexpected error; the plugin is disabled");
    state().configured = false;
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE && state().configured) start_step(sp);
  } catch (...) {
    slurm_error("auto-resume: step start: unexpected error");
  }
  return 0;
}

// srun, once it has its step: which step a re-run would repeat.
__attribute__((visibility("default"))) int slurm_spank_local_user_init(spank_t sp, int, char**) {
  try {
    auto& s = state();
    if (spank_context() != S_CTX_LOCAL || !s.configured) return 0;
    SpankHandle h(sp);
    auto job = h.u32(S_JOB_ID);
    auto step = h.u32(S_JOB_STEPID);
    if (job && step) {
      s.job_id = *job;
      s.step_id = *step;
      s.local_step_known = true;
    }
  } catch (...) {
    slurm_error("auto-resume: srun init: unexpected error");
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_init(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE && state().configured) prepare_task(sp);
  } catch (...) {
    slurm_error("auto-resume: task init: unexpected error");
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_exit(spank_t sp, int, char**) {
  try {
    auto& s = state();
    if (spank_context() != S_CTX_REMOTE || !s.reporter) return 0;
    SpankHandle h(sp);
    ar::proto::TaskExit msg;
    msg.job_id = s.job_id;
    msg.step_id = s.step_id;
    msg.node = s.node;
    msg.task_rank = h.u32(S_TASK_GLOBAL_ID).value_or(0);
    msg.wait_status = h.i32(S_TASK_EXIT_STATUS).value_or(0);
    s.reporter->report(msg);
  } catch (...) {
    slurm_error("auto-resume: task exit: unexpected error");
  }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_exit(spank_t, int, char**) {
  try {
    auto& s = state();
    if (spank_context() == S_CTX_LOCAL) {
      rerun_step_if_asked();
      return 0;
    }
    if (spank_context() != S_CTX_REMOTE || !s.reporter) return 0;
    ar::proto::StepEnd msg;
    msg.job_id = s.job_id;
    msg.step_id = s.step_id;
    msg.node = s.node;
    s.reporter->report(msg);
    s.reporter.reset();
  } catch (...) {
    slurm_error("auto-resume: step end: unexpected error");
  }
  return 0;
}

}  // extern "C"
