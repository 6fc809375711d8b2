#include "health_service.hpp"

#include "state/job_registry.hpp"

#include <spdlog/spdlog.h>

#include "text/text.hpp"

namespace ar::healthd {

namespace {
std::vector<LocalTask> local_tasks(const JobRecord& job) {
  std::vector<LocalTask> tasks;
  for (const auto& t : job.running_tasks()) tasks.push_back({t.task_rank, t.pid});
  return tasks;
}
}  // namespace

std::vector<LocalJob> running_jobs(const JobRegistry& registry) {
  std::vector<LocalJob> jobs;
  for (const auto& [id, job] : registry.jobs())
    if (job.running())
      jobs.push_back({id, job.restart_count, job.auto_resume(), job.max_resumes, job.heartbeat, job.batch_here(),
                      job.running_auto_resume_steps(), job.uid, local_tasks(job)});
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
  engine_.request_sweep("job " + std::to_string(exit.job_id) + " step failed", f);
}

std::uint64_t HealthService::check_now() {
  return engine_.request_sweep("on demand", std::nullopt, true);
}

void HealthService::judge_now(const std::string& why, bool poll) { engine_.request_sweep(why, std::nullopt, false, poll); }

void HealthService::registry_changed() { engine_.set_jobs(running_jobs(registry_)); }

}  // namespace ar::healthd

namespace ar::healthd {

nlohmann::json HealthService::events(std::uint32_t limit) {
  return events_ != nullptr ? events_->events(limit) : nlohmann::json::array();
}

// Checked against the engine's last published state (the event loop must not wait for the engine,
// which may be inside a Slurm call), and carried out on the engine thread, which looks at Slurm's
// state again: what changed in between is said in the action's `admin` event.
std::expected<nlohmann::json, proto::Error> HealthService::admin(const AdminRequest& request, const Peer& peer) {
  const auto standing = engine_.standing();
  const auto at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(WallClock::now().time_since_epoch()).count();
  // Unique across restarts too (the time in ms, then a counter), so healthctl never takes another
  // request's event for its own.
  const std::uint64_t request_id = static_cast<std::uint64_t>(at_ms) * 1024 + (next_request_++ % 1024);
  const std::string who = "uid " + std::to_string(peer.uid);
  auto accepted = [&](std::string message) {
    return nlohmann::json{{"message", std::move(message)}, {"at_ms", at_ms}, {"request", request_id}};
  };
  if (const auto* drain = std::get_if<proto::AdminDrain>(&request)) {
    const auto reason = sanitize(drain->reason, 200);
    engine_.admin({Engine::AdminAction::Kind::drain, reason, false, peer.uid, request_id});
    spdlog::info("admin ({}, pid {}): drain: {}", who, peer.pid, reason);
    return accepted("drain queued (reason \"healthd: ADMIN: " + reason + "\"); healthd journals and carries it out now");
  }
  if (const auto* resume = std::get_if<proto::AdminResume>(&request)) {
    if (!resume->force && !standing.own_drain)
      return std::unexpected(proto::Error{proto::err::kConflict,
                                          "healthd has not drained this node (see sinfo -R for who did); "
                                          "resume --force resumes it anyway"});
    engine_.admin({Engine::AdminAction::Kind::resume, "", resume->force, peer.uid, request_id});
    spdlog::info("admin ({}, pid {}): resume{}", who, peer.pid, resume->force ? " --force" : "");
    return accepted(std::string("resume queued") + (resume->force ? " (--force)" : "") + "; healthd journals and carries it out now");
  }
  const auto& clear = std::get<proto::AdminClear>(request);
  const auto code = sanitize(clear.code, 64);
  if (!engine_.holds_code(code))
    return std::unexpected(proto::Error{proto::err::kConflict, "no active fault or warning has code " + proto::quote_client_text(code) +
                                                                   " (healthctl status lists them)"});
  engine_.admin({Engine::AdminAction::Kind::clear, code, false, peer.uid, request_id});
  spdlog::info("admin ({}, pid {}): clear {}", who, peer.pid, code);
  judge_now("admin clear");
  return accepted("clear of " + code + " queued; the checks forget it and the node is judged again now");
}

}  // namespace ar::healthd
