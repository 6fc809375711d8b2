// A cure chain's GPU reset step carried out: once the node is still healthd's and idle, the reset runs
// on a thread of its own that the engine polls, never waits for (background_runs.hpp); its outcome
// moves the chain on (cure_walk.cpp).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "text/text.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd {
namespace {

// The reset step failed: the entry is done and the chain goes on (the run of the journal completes
// the entry, then the next step starts).
Carried reset_failed(const ExecutorServices& services, const JournalEntry& e, const std::string& why) {
  services.resets.runs.forget(e.id);
  auto& c = *services.journal.own_drain()->cure;
  c.phase = CureProgress::Phase::failed;
  c.last = why;
  return Carried{};
}

// Starts the reset on a thread of its own, once the node is still healthd's and idle. Nothing: it
// runs (in the resets' runs); a value: not started, and the entry's answer now.
std::expected<std::optional<Carried>, std::string> start_reset(const ExecutorServices& services, const JournalEntry& e,
                                                               WallTime now) {
  auto& own = services.journal.own_drain();
  auto& c = *own->cure;
  const auto& cure = services.policy.cure;
  // A reset needs the GPU idle: the node's jobs gone (requeued, ended, drained away), as this
  // node's registry sees them.
  auto info = services.slurm.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  if (!info->drained_or_draining() || !info->reason.starts_with(kReasonPrefix)) {
    // Resumed, or drained again by someone else: the node is not healthd's to reset any more.
    spdlog::warn("node {}: no longer drained by healthd ({}): GPU reset not done, the cure ends", e.node,
                 info->drained_or_draining() ? sanitize(info->reason, 120) : std::string("in service"));
    own.reset();
    return Carried{};
  }
  if (services.jobs_here > 0) {
    if (now - e.created > cure.reset_wait)
      return reset_failed(services, e, "the node still runs jobs after " + std::to_string(cure.reset_wait.count()) + " s");
    c.last = "waiting for the node's jobs to leave (" + std::to_string(services.jobs_here) + " running)";
    services.journal.wait_until(e.id, now + std::chrono::seconds(2), c.last);
    return Carried{.finished = false};
  }
  auto started = services.resets.runs.start(e.id, [resetter = services.resets.reset, config = cure, gpus = c.gpus,
                                                   node = services.node] {
    return resetter ? resetter(config, gpus, node) : reset_gpus(config, gpus, node, {});
  });
  if (!started) return std::unexpected("GPU reset: " + started.error());
  spdlog::warn("node {}: resetting GPU(s) for {}", e.node, e.code);
  c.last = "GPU reset running";
  c.since = now;
  return std::optional<Carried>();
}

// No reset tool here: not a failed reset (the chain does not go on to a reboot or a replacement);
// the node is held, its reason says what it needs.
std::expected<Carried, std::string> reset_cannot_run_here(const ExecutorServices& services, const JournalEntry& e,
                                                          const GpuResetOutcome& result, WallTime now) {
  const auto& own = services.journal.own_drain();
  const CannotRun missing{result.message, reset_cannot_run(services.policy.cure).value_or(CannotRun{}).needs};
  const std::string needs = missing.needs.empty() ? "needs a GPU reset: " + result.message : missing.needs;
  const std::string reason = reason_needing(own->reason, needs);
  auto info = services.slurm.node(e.node);
  if (!info) return std::unexpected(info.error().message);  // the reset is asked again, and says the same
  if (info->drained_or_draining() && info->reason.starts_with(kReasonPrefix) && info->reason != reason)
    if (auto r = services.slurm.set_reason(e.node, reason); !r) return std::unexpected(r.error().message);
  hold_cannot_run(services, {missing.why, needs}, reason, now);
  return Carried{};
}

// What the reset's thread answered.
std::expected<Carried, std::string> reset_finished(const ExecutorServices& services, const JournalEntry& e,
                                                   const GpuResetOutcome& result, WallTime now) {
  auto& c = *services.journal.own_drain()->cure;
  switch (result.kind) {
    case GpuResetOutcome::Kind::blocked:
      if (now - e.created > services.policy.cure.reset_wait) return reset_failed(services, e, result.message);
      c.last = result.message;
      spdlog::info("node {}: {}", e.node, result.message);
      services.journal.wait_until(e.id, now + std::chrono::seconds(5), result.message);
      return Carried{.finished = false};
    case GpuResetOutcome::Kind::failed:
      spdlog::error("node {}: {}", e.node, result.message);
      return reset_failed(services, e, result.message);
    case GpuResetOutcome::Kind::cannot_run: return reset_cannot_run_here(services, e, result, now);
    case GpuResetOutcome::Kind::reset: break;
  }
  spdlog::warn("node {}: {}; judging the node again", e.node, result.message);
  c.phase = CureProgress::Phase::verifying;
  c.since = now;
  c.last = result.message;
  // What the checks remember of the fault (an XID event) was about the GPU before its reset.
  if (services.resets.cured) services.resets.cured(e.code);
  return Carried{.acted = Action::reset_gpu};
}

}  // namespace

std::expected<Carried, std::string> carry_out_reset(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  auto& own = services.journal.own_drain();
  // Resumed meanwhile (by an admin, or the fault cleared): nothing left to cure.
  if (!own || !own->cure || own->cure->current() != Action::reset_gpu) return Carried{};
  auto& c = *own->cure;
  if (!services.resets.runs.running(e.id)) {
    auto started = start_reset(services, e, now);
    if (!started) return std::unexpected(started.error());
    if (*started) return **started;  // not started: the entry's answer now
  }
  auto result = services.resets.runs.take(e.id);
  if (!result) {
    // NVML or the program stuck past every deadline (a wedged GPU): the thread is left behind, the
    // step counts as failed.
    const auto limit =
        services.policy.cure.reset_timeout * static_cast<int>(std::max<std::size_t>(1, c.gpus.size())) + std::chrono::seconds(60);
    if (now - c.since > limit)
      return reset_failed(services, e,
                          "GPU reset did not answer within " +
                              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) + " s");
    services.journal.wait_until(e.id, now + kRunningRecheck, "GPU reset running");
    return Carried{.finished = false};
  }
  return reset_finished(services, e, *result, now);
}

}  // namespace ar::healthd
