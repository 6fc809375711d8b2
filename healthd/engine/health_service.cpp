#include "health_service.hpp"

#include "state/job_registry.hpp"

namespace ar::healthd {

std::vector<LocalJob> running_jobs(const JobRegistry& registry) {
  std::vector<LocalJob> jobs;
  for (const auto& [id, job] : registry.jobs())
    if (job.running()) jobs.push_back({id, job.restart_count, job.auto_resume(), job.max_resumes});
  return jobs;
}

void HealthService::on_task_failure(const proto::TaskExit& exit, const JobRecord& job) {
  bool auto_resume = false;
  if (auto it = job.steps.find({job.restart_count, exit.step_id}); it != job.steps.end()) auto_resume = it->second.auto_resume;
  // Only auto-resume steps make healthd look at once; a faulty node under any job is still found
  // by the periodic sweep and the kernel-log events.
  if (!auto_resume) return;
  // The first failed task of a step says all a sweep needs; a step of thousands of tasks failing
  // at once (NCCL aborting everywhere) must not note the timeline and queue a sweep per task.
  auto [it, first] = failed_steps_.try_emplace({exit.job_id, job.restart_count, exit.step_id}, 0);
  ++it->second;
  if (!first) return;
  if (failed_steps_.size() > 4096) failed_steps_.clear();  // bounded; forgetting only costs a sweep
  engine_.note(exit.job_id, {WallClock::now(), exit.node, "step failed",
                             "step " + proto::step_name(exit.step_id) + " task " + std::to_string(exit.task_rank) + ": " +
                                 describe_wait_status(exit.wait_status)});
  StepFailure f{exit.job_id, exit.step_id, job.restart_count, exit.task_rank, exit.wait_status, true, job.max_resumes};
  engine_.request_sweep("job " + std::to_string(exit.job_id) + " step failed", running_jobs(registry_), f);
}

std::uint64_t HealthService::check_now() {
  return engine_.request_sweep("on demand", running_jobs(registry_), std::nullopt, true);
}

void HealthService::judge_now(const std::string& why, bool poll) {
  engine_.request_sweep(why, running_jobs(registry_), std::nullopt, false, poll);
}

}  // namespace ar::healthd
