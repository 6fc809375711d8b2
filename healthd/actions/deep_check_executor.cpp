// The deep check carried out: the admin's long test ([cure] deep_check) of a node healthd holds out of
// service, before it returns; run on a thread of its own that the engine polls (background_runs.hpp).
#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "config/fields.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<bool, std::string> SlurmActions::do_deep_check(const JournalEntry& e, WallTime now) {
  auto& own = journal_.own_drain();
  if (!own || policy_.cure.deep_check.empty()) {
    programs_.forget(e.id);
    if (own) {
      // Turned off meanwhile: the node returns as it would without one.
      JournalEntry resume = e;
      resume.kind = Action::resume;
      resume.next_try = now;
      if (auto r = journal_.add(std::move(resume)); !r) spdlog::error("journal: {}", r.error());
    }
    return true;
  }
  if (!programs_.running(e.id)) {
    auto started = deep_check_start(e, now);
    if (!started) return std::unexpected(started.error());
    if (*started) return **started;  // not started: the entry's answer now
  }
  auto run = programs_.take(e.id);
  if (!run) {
    journal_.wait_until(e.id, now + std::chrono::milliseconds(500), "deep check running");
    return false;
  }
  deep_check_finished(e, *run, now);
  return true;
}

// Starts the admin's deep check, only on a node healthd holds out of service with nothing on it: a
// node back in service (Slurm resumed it after a reboot, an admin did) is not healthd's to test any
// more. Nothing: it runs (in programs_); a value: not started, and the entry's answer now.
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
  if (auto started = programs_.start(e.id, std::move(argv), std::move(env), timeout); !started)
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
