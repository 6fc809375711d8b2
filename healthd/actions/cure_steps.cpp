// The cure chain's steps that run on the node itself, carried out: a GPU reset, a deep check before
// the node returns, and the request for new hardware (replace). The chain around them (which step,
// what after a failed one) is cure_actions.cpp's. A reset and a deep check run on a thread of their
// own that the engine polls, never waits for (background_runs.hpp).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "config/fields.hpp"
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

std::expected<bool, std::string> SlurmActions::do_replace(const JournalEntry& e, WallTime now) {
  auto info = slurm_.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  // No replace hook: nothing would ask for the new hardware. The node is held for an admin, its
  // reason saying so, instead of "replacement requested" that no one acts on.
  const auto missing = replace_cannot_run(policy_.hooks);
  const auto& own_before = journal_.own_drain();
  const std::string reason =
      missing ? reason_needing(own_before ? own_before->reason : e.reason, missing->needs) : e.reason;
  // A reboot still finishing (healthd runs again before slurmd has registered): slurmd registering
  // may still change the node's state and reason. Wait for it, 10 minutes at most.
  if (info->reboot_pending() && now - e.created < std::chrono::minutes(10)) {
    journal_.wait_until(e.id, now + std::chrono::seconds(2), "waiting for the node's reboot to finish");
    return false;
  }
  if (info->drained_or_draining() && !info->reason.starts_with(kReasonPrefix)) {
    // Someone else's drain: their reason stays; the replace hooks still run (the cure is theirs to finish).
    spdlog::info("node {} is drained by someone else ({}); replacement requested without changing it", e.node,
                 sanitize(info->reason, 240));
  } else if (info->drained_or_draining()) {
    if (info->reason != reason)
      if (auto r = slurm_.set_reason(e.node, reason); !r) return std::unexpected(r.error().message);
  } else {
    // Back in service (an admin resumed it): drained again, within the share cap.
    JournalEntry drain = e;
    drain.kind = Action::drain;
    drain.reason = reason;
    drain.reboot = false;
    auto r = do_drain(drain, now);
    if (!r) return r;
    if (!withheld_.empty()) {
      // Withheld by the share cap (status says so): asked again later, nothing requested meanwhile.
      journal_.wait_until(e.id, now + std::chrono::seconds(30), withheld_);
      return false;
    }
  }
  auto& own = journal_.own_drain();
  if (!own) own = OwnDrain{e.code, reason, now, true, false, std::nullopt, std::nullopt};
  if (missing) {
    acted_.reset();  // nothing was requested: no "replacement requested" notice
    own->reason = reason;
    own->held = true;
    cannot_run_here(*missing, reason, now);
    return true;
  }
  own->reason = reason;
  own->held = true;  // new hardware: never returned by healthd itself
  if (own->cure) {
    own->cure->phase = CureProgress::Phase::exhausted;
    own->cure->since = now;
    own->cure->last = "replacement requested";
  }
  spdlog::error("node {}: replacement requested: {}", e.node, e.reason);
  acted_ = Action::replace;
  return true;
}

std::expected<bool, std::string> SlurmActions::do_deep_check(const JournalEntry& e, WallTime now) {
  auto& own = journal_.own_drain();
  if (!own || policy_.cure.deep_check.empty()) {
    deep_checks_running_.forget(e.id);
    if (own) {
      // Turned off meanwhile: the node returns as it would without one.
      JournalEntry resume = e;
      resume.kind = Action::resume;
      resume.next_try = now;
      if (auto r = journal_.add(std::move(resume)); !r) spdlog::error("journal: {}", r.error());
    }
    return true;
  }
  if (!deep_checks_running_.running(e.id)) {
    auto started = deep_check_start(e, now);
    if (!started) return std::unexpected(started.error());
    if (*started) return **started;  // not started: the entry's answer now
  }
  auto run = deep_checks_running_.take(e.id);
  if (!run) {
    journal_.wait_until(e.id, now + std::chrono::milliseconds(500), "deep check running");
    return false;
  }
  deep_check_finished(e, *run, now);
  return true;
}

// Starts the admin's deep check, only on a node healthd holds out of service with nothing on it: a
// node back in service (Slurm resumed it after a reboot, an admin did) is not healthd's to test any
// more. Nothing: it runs (in deep_checks_running_); a value: not started, and the entry's answer now.
std::expected<std::optional<bool>, std::string> SlurmActions::deep_check_start(const JournalEntry& e, WallTime now) {
  auto& own = journal_.own_drain();
  const auto& cure = policy_.cure;
  auto info = slurm_.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  if (!info->drained_or_draining() || !info->reason.starts_with(kReasonPrefix)) {
    spdlog::info("node {}: not drained by healthd any more: no deep check", e.node);
    own.reset();
    return std::optional<bool>(true);
  }
  if (jobs_here_ > 0) {
    journal_.wait_until(e.id, now + std::chrono::seconds(2), "deep check waits for the node's jobs to leave");
    return std::optional<bool>(false);
  }
  std::vector<std::string> argv;
  for (const auto& word : cure.deep_check) argv.push_back(expand_node_name(word, e.node));
  std::vector<std::string> env = {"HEALTHD_ACTION=deep_check", "HEALTHD_NODE=" + sanitize(e.node, 255),
                                  "HEALTHD_CODE=" + sanitize(e.code, 120), "HEALTHD_REASON=" + sanitize(e.reason, 1000)};
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(cure.deep_check_timeout);
  const std::string program = argv.front();  // argv moves to the thread
  if (auto started = start_program(deep_checks_running_, e.id, std::move(argv), std::move(env), timeout); !started)
    return std::unexpected("deep check: " + started.error());
  spdlog::info("node {}: deep check before it returns: {}", e.node, program);
  if (own->cure) own->cure->last = "deep check running";
  return std::optional<bool>();
}

// What the deep check came to: passed, the next healthy sweep returns the node (a fault found
// meanwhile keeps it out); failed, the node stays out, held, with the test's message: the admin decides.
void SlurmActions::deep_check_finished(const JournalEntry& e, const std::expected<ProcessResult, std::string>& run,
                                       WallTime now) {
  auto& own = journal_.own_drain();
  std::string failure;
  if (!run) failure = "did not run: " + sanitize(run.error(), 200);
  else if (run->timed_out) failure = "no result within " + std::to_string(policy_.cure.deep_check_timeout.count()) + " s";
  else if (run->signaled || run->exit_code != 0) {
    const std::string said = first_output_line(*run);
    failure = (run->signaled ? std::string("killed by a signal") : "exit " + std::to_string(run->exit_code)) +
              (said.empty() ? "" : ": " + said);
  }
  if (!own->cure) own->cure = CureProgress{};
  acted_ = Action::deep_check;
  if (failure.empty()) {
    own->cure->deep_checked = true;
    own->cure->last = "deep check passed";
    spdlog::info("node {}: deep check passed; the next healthy sweep returns it", e.node);
    cure_notice("deep check passed on " + e.node, Action::deep_check, now);
    return;
  }
  const std::string reason = truncate_utf8(std::string(kReasonPrefix) + " DEEP-CHECK: " + failure, 240);
  spdlog::error("node {}: deep check failed ({}); it stays out until an admin resumes it", e.node, failure);
  auto info = slurm_.node(e.node);
  if (info && info->drained_or_draining() && info->reason.starts_with(kReasonPrefix))
    if (auto r = slurm_.set_reason(e.node, reason); !r) spdlog::error("node {}: reason not set: {}", e.node, r.error().message);
  own->reason = reason;
  own->held = true;
  own->cure->last = "deep check failed: " + failure;
  cure_notice("deep check failed on " + e.node + ": " + failure + "; the node stays out", Action::deep_check, now);
}

}  // namespace ar::healthd
