#include "remote_context.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "auto_resume/job_comment.hpp"
#include "auto_resume/protocol.hpp"
#include "checkpoint.hpp"
#include "host_list.hpp"
#include "plugin_state.hpp"
#include "slurm_job.hpp"
#include "spank_handle.hpp"
#include "step_rerun.hpp"

namespace ar::plugin::remote {
namespace {

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
  if (!s.heartbeat.empty())
    msg.heartbeat = ar::proto::Heartbeat{s.heartbeat, s.stall.stall_s, s.stall.first_beat_s, s.heartbeat_per_rank,
                                         // Only a path healthd takes: a bad one must not cost the step its heartbeat.
                                         s.heartbeat_per_rank && ar::proto::valid_heartbeat_path(s.checkpoint_dir)
                                             ? s.checkpoint_dir
                                             : std::string()};
  return msg;
}

// This node's name, from Slurm. The batch script's node is the job record's batch host. An srun
// step's is this node's entry of the step's node list, which comes through the job's environment
// (the user can set it): it is taken only when it is a node of the job's record. Without a record
// (a step that needs none, or slurmctld not answering) the list's entry is taken as it is, and the
// socket template refuses any name that could lead the path elsewhere.
std::optional<std::string> node_of_step(const SpankHandle& h, std::uint32_t job_id, std::uint32_t step_id,
                                        const std::optional<JobFacts>& job) {
  const bool batch_step = step_id == ar::proto::kBatchStep;
  if (batch_step && job && !job->batch_host.empty()) return job->batch_host;
  auto name = h.node_name_from_env(batch_step);
  if (!name || !job) return name;
  if (!host_list_holds(job->nodes, *name)) {
    log_error("the step's node list names " + ar::proto::quote_client_text(*name) + ", which is not a node of job " +
              std::to_string(job_id) + " (" + job->nodes + ")");
    return std::nullopt;
  }
  return name;
}

// Runs in the task as the job's user, so the checkpoint directory is read with the user's rights, as
// the training code will read it.
void export_checkpoint(spank_t sp) {
  auto& s = state();
  if (s.checkpoint_dir.empty()) return;
  spank_setenv(sp, "AUTO_RESUME_CHECKPOINT_DIR", s.checkpoint_dir.c_str(), 1);
  std::error_code ec;
  if (!std::filesystem::exists(s.checkpoint_dir, ec)) return;  // a first attempt has written none yet
  auto newest = newest_complete_checkpoint(s.checkpoint_dir);
  if (!newest) {
    log_error(newest.error());
    return;
  }
  if (*newest) spank_setenv(sp, "AUTO_RESUME_CHECKPOINT", (*newest)->c_str(), 1);
  else spank_unsetenv(sp, "AUTO_RESUME_CHECKPOINT");
}

// --auto-resume-heartbeat-dir: this task's own heartbeat file, named by its global rank.
void export_heartbeat_file(spank_t sp, const SpankHandle& h) {
  const auto& s = state();
  if (!s.heartbeat_per_rank || s.heartbeat.empty() || s.step_id == ar::proto::kBatchStep) return;
  auto rank = h.u32(S_TASK_GLOBAL_ID);
  if (!rank) return;
  const std::string file = s.heartbeat + (s.heartbeat.ends_with('/') ? "" : "/") + "rank-" + std::to_string(*rank);
  spank_setenv(sp, "AUTO_RESUME_HEARTBEAT_FILE", file.c_str(), 1);
}

// Why the last attempt ended, from the line healthd left in the job's admin comment when it requeued
// it (the user's own --comment is never touched), for the batch script's task of a restarted job
// (srun steps inherit the variables from the script). Answers the job's step re-runs so far (0 when
// unknown).
std::uint32_t export_last_attempt(spank_t sp, const JobFacts& job) {
  auto last = ar::parse_attempt_comment(ar::auto_resume_line(job.admin_comment));
  if (!last) return 0;  // requeued by someone else (an admin, Slurm itself): nothing of ours to pass on
  spank_setenv(sp, "AUTO_RESUME_LAST_CODE", last->code.c_str(), 1);
  spank_setenv(sp, "AUTO_RESUME_LAST_NODE", last->node.c_str(), 1);
  spank_setenv(sp, "AUTO_RESUME_LAST_REASON", (last->code + " on " + last->node + ": " + last->message).c_str(), 1);
  spank_setenv(sp, kStepRerunsEnv, std::to_string(last->reruns).c_str(), 1);
  return last->reruns;
}

// A job asked auto-resume but cannot be requeued (sbatch --no-requeue, JobRequeue=0 in slurm.conf
// without --requeue, or not a batch job): at a fault healthd could only drain the node, and Slurm
// would refuse the requeue. Said at once, in the job's own output (this is the task: its stderr is
// the job's), and in AUTO_RESUME_REQUEUE=0 for the training code: in the first attempt's batch
// script, or in step 0 of a job that has no batch script, from the record start_step read.
void warn_if_not_requeueable(spank_t sp, const JobFacts& job, std::uint32_t job_id, std::uint32_t step_id) {
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

}  // namespace

void step_start(spank_t sp) {
  auto& s = state();
  SpankHandle h(sp);
  auto ids = h.step_ids();
  if (!ids) {
    log_error("cannot read the job or step id; this step is not reported");
    return;
  }
  // Known from here on, reported or not: the task's variables (task_init) need them either way.
  s.job_id = ids->job;
  s.step_id = ids->step;
  if (!is_reported_step(ids->step)) return;
  // Slurm's own record of the job: the restart count (S_SLURM_RESTART_COUNT reads 0 on 22.05,
  // and the environment's SLURM_RESTART_COUNT is the user's to set) and the node names. Read for the
  // steps whose attempt matters to healthd: every auto-resume step, and the batch script (whose task
  // also needs the requeue flag and the admin comment).
  if (ids->step == ar::proto::kBatchStep || s.auto_resume.value_or(false)) {
    s.job = read_job(ids->job);
    if (!s.job) log_error("cannot read job " + std::to_string(ids->job) + " from slurmctld; its restart count is taken as " +
                          std::to_string(h.u32(S_SLURM_RESTART_COUNT).value_or(0)));
  }
  auto node = node_of_step(h, ids->job, ids->step, s.job);
  if (!node) {
    log_error("cannot find this node's name in the step's node list; this step is not reported");
    return;
  }
  auto path = expand_socket_template(s.args.socket_template, *node);
  if (!path) {
    log_error(path.error() + "; this step is not reported");
    return;
  }
  s.node = *node;
  s.socket_path = *path;
  s.reporter = std::make_unique<StepReporter>(*path, s.args.timeout, s.args.step_budget, log_error);

  auto msg = start_message(h, s.job ? s.job->restart_count : h.u32(S_SLURM_RESTART_COUNT).value_or(0));
  s.reported_restart_count = msg.restart_count;
  s.reporter->report(msg);
}

// In the task, just before exec (as the job's user): the variables the training code reads. The
// attempt is counted from the job's record read as the step started; where slurmctld did not answer
// then, the task asks once more, and a batch step reported with a stale count is corrected (healthd
// takes a correction from the job's owner for that job only).
void task_init(spank_t sp) {
  auto& s = state();
  SpankHandle h(sp);
  const bool reads_job = s.step_id == ar::proto::kBatchStep || s.auto_resume.value_or(false);
  // Job ids start at 1: 0 is a step whose ids Slurm did not give (step_start said so), not a job to ask about.
  if (!s.job && reads_job && s.job_id != 0) s.job = read_job(s.job_id);
  const std::uint32_t restart_count = s.job ? s.job->restart_count : s.reported_restart_count;
  spank_setenv(sp, "AUTO_RESUME", s.auto_resume.value_or(false) ? "1" : "0", 1);
  export_checkpoint(sp);
  export_heartbeat_file(sp, h);
  // Step re-runs inside the allocation are attempts too: a re-run srun carries their number, and a
  // restarted batch script reads it from healthd's line.
  std::uint32_t reruns = 0;
  if (auto env = h.job_env(kStepRerunsEnv))
    reruns = parse_count(env->c_str()).value_or(0);
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

// In slurmstepd (root) once a task is forked: which process runs which rank, for healthd to look at
// when the job stalls. Steps with per-rank heartbeats only (the others need no message per task).
void task_started(spank_t sp) {
  auto& s = state();
  if (!s.reporter || !s.heartbeat_per_rank || !s.auto_resume.value_or(false) || s.step_id == ar::proto::kBatchStep) return;
  SpankHandle h(sp);
  auto pid = h.i32(S_TASK_PID);
  auto rank = h.u32(S_TASK_GLOBAL_ID);
  if (!pid || *pid <= 1 || !rank) return;
  proto::TaskStart msg;
  msg.job_id = s.job_id;
  msg.step_id = s.step_id;
  msg.node = s.node;
  msg.task_rank = *rank;
  msg.pid = static_cast<std::uint32_t>(*pid);
  s.reporter->report(msg);
}

void task_exit(spank_t sp) {
  auto& s = state();
  if (!s.reporter) return;
  SpankHandle h(sp);
  proto::TaskExit msg;
  msg.job_id = s.job_id;
  msg.step_id = s.step_id;
  msg.node = s.node;
  msg.task_rank = h.u32(S_TASK_GLOBAL_ID).value_or(0);
  msg.wait_status = h.i32(S_TASK_EXIT_STATUS).value_or(0);
  s.reporter->report(msg);
}

void step_end() {
  auto& s = state();
  if (!s.reporter) return;
  proto::StepEnd msg;
  msg.job_id = s.job_id;
  msg.step_id = s.step_id;
  msg.node = s.node;
  s.reporter->report(msg);
  s.reporter.reset();
}

}  // namespace ar::plugin::remote
