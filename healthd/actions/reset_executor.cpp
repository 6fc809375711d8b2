// A cure chain's GPU reset step carried out: once the node is still healthd's and idle, the reset runs
// on a thread of its own that the engine polls, never waits for (background_runs.hpp); its outcome
// moves the chain on (cure_actions.cpp).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<bool, std::string> SlurmActions::do_reset(const JournalEntry& e, WallTime now) {
  auto& own = journal_.own_drain();
  // Resumed meanwhile (by an admin, or the fault cleared): nothing left to cure.
  if (!own || !own->cure || own->cure->current() != Action::reset_gpu) return true;
  auto& c = *own->cure;
  if (!resets_running_.running(e.id)) {
    auto started = reset_start(e, now);
    if (!started) return std::unexpected(started.error());
    if (*started) return **started;  // not started: the entry's answer now
  }
  auto result = resets_running_.take(e.id);
  if (!result) {
    // NVML or the program stuck past every deadline (a wedged GPU): the thread is left behind, the
    // step counts as failed.
    const auto limit = policy_.cure.reset_timeout * static_cast<int>(std::max<std::size_t>(1, c.gpus.size())) + std::chrono::seconds(60);
    if (now - c.since > limit)
      return reset_failed(e, "GPU reset did not answer within " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) + " s");
    journal_.wait_until(e.id, now + std::chrono::milliseconds(200), "GPU reset running");
    return false;
  }
  return reset_finished(e, *result, now);
}

// The reset step failed: the entry is done and the chain goes on (run_due completes the entry, then
// the next step starts).
bool SlurmActions::reset_failed(const JournalEntry& e, const std::string& why) {
  resets_running_.forget(e.id);
  auto& c = *journal_.own_drain()->cure;
  c.phase = CureProgress::Phase::failed;
  c.last = why;
  return true;
}

// Starts the reset on a thread of its own, once the node is still healthd's and idle. Nothing: it
// runs (in resets_running_); a value: not started, and the entry's answer now.
std::expected<std::optional<bool>, std::string> SlurmActions::reset_start(const JournalEntry& e, WallTime now) {
  auto& own = journal_.own_drain();
  auto& c = *own->cure;
  // A reset needs the GPU idle: the node's jobs gone (requeued, ended, drained away), as this
  // node's registry sees them.
  auto info = slurm_.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  if (!info->drained_or_draining() || !info->reason.starts_with(kReasonPrefix)) {
    // Resumed, or drained again by someone else: the node is not healthd's to reset any more.
    spdlog::warn("node {}: no longer drained by healthd ({}): GPU reset not done, the cure ends", e.node,
                 info->drained_or_draining() ? sanitize(info->reason, 120) : std::string("in service"));
    own.reset();
    return std::optional<bool>(true);
  }
  if (jobs_here_ > 0) {
    if (now - e.created > policy_.cure.reset_wait)
      return std::optional<bool>(reset_failed(e, "the node still runs jobs after " + std::to_string(policy_.cure.reset_wait.count()) + " s"));
    c.last = "waiting for the node's jobs to leave (" + std::to_string(jobs_here_) + " running)";
    journal_.wait_until(e.id, now + std::chrono::seconds(2), c.last);
    return std::optional<bool>(false);
  }
  auto started = resets_running_.start(e.id, [resetter = reset_gpus_, config = policy_.cure, gpus = c.gpus, node = node_] {
    return resetter ? resetter(config, gpus, node) : reset_gpus(config, gpus, node, {});
  });
  if (!started) return std::unexpected("GPU reset: " + started.error());
  spdlog::warn("node {}: resetting GPU(s) for {}", e.node, e.code);
  c.last = "GPU reset running";
  c.since = now;
  return std::optional<bool>();
}

// What the reset's thread answered.
std::expected<bool, std::string> SlurmActions::reset_finished(const JournalEntry& e, const GpuResetOutcome& result,
                                                              WallTime now) {
  auto& own = journal_.own_drain();
  auto& c = *own->cure;
  switch (result.kind) {
    case GpuResetOutcome::Kind::blocked:
      if (now - e.created > policy_.cure.reset_wait) return reset_failed(e, result.message);
      c.last = result.message;
      spdlog::info("node {}: {}", e.node, result.message);
      journal_.wait_until(e.id, now + std::chrono::seconds(5), result.message);
      return false;
    case GpuResetOutcome::Kind::failed: spdlog::error("node {}: {}", e.node, result.message); return reset_failed(e, result.message);
    case GpuResetOutcome::Kind::cannot_run: {
      // No reset tool here: not a failed reset (the chain does not go on to a reboot or a
      // replacement); the node is held, its reason says what it needs.
      const CannotRun missing{result.message, reset_cannot_run(policy_.cure).value_or(CannotRun{}).needs};
      const std::string needs = missing.needs.empty() ? "needs a GPU reset: " + result.message : missing.needs;
      const std::string reason = reason_needing(own->reason, needs);
      auto info = slurm_.node(e.node);
      if (!info) return std::unexpected(info.error().message);  // the reset is asked again, and says the same
      if (info->drained_or_draining() && info->reason.starts_with(kReasonPrefix) && info->reason != reason)
        if (auto r = slurm_.set_reason(e.node, reason); !r) return std::unexpected(r.error().message);
      cannot_run_here({missing.why, needs}, reason, now);
      return true;
    }
    case GpuResetOutcome::Kind::reset: break;
  }
  spdlog::warn("node {}: {}; judging the node again", e.node, result.message);
  c.phase = CureProgress::Phase::verifying;
  c.since = now;
  c.last = result.message;
  acted_ = Action::reset_gpu;
  // What the checks remember of the fault (an XID event) was about the GPU before its reset.
  if (cured_) cured_(e.code);
  return true;
}

}  // namespace ar::healthd
