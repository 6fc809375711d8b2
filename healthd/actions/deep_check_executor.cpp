// The deep check carried out: the admin's long test ([cure] deep_check) of a node healthd holds out of
// service, before it returns; run on a thread of its own that the engine polls (program_runs.hpp).
#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "config/fields.hpp"
#include "text/text.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd {
namespace {

// Starts the admin's deep check, only on a node healthd holds out of service with nothing on it: a
// node back in service (Slurm resumed it after a reboot, an admin did) is not healthd's to test any
// more. Nothing: it runs (in the programs' runs); a value: not started, and the entry's answer now.
std::expected<std::optional<Carried>, std::string> start_deep_check(const ExecutorServices& services, const JournalEntry& e,
                                                                    WallTime now) {
  auto& own = services.journal.own_drain();
  const auto& cure = services.policy.cure;
  auto info = services.slurm.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  if (!info->drained_or_draining() || !info->reason.starts_with(kReasonPrefix)) {
    spdlog::info("node {}: not drained by healthd any more: no deep check", e.node);
    own.reset();
    return Carried{};
  }
  if (services.jobs_here > 0) {
    services.journal.wait_until(e.id, now + std::chrono::seconds(2), "deep check waits for the node's jobs to leave");
    return Carried{.finished = false};
  }
  std::vector<std::string> argv;
  for (const auto& word : cure.deep_check) argv.push_back(expand_node_name(word, e.node));
  std::vector<std::string> env = {"HEALTHD_ACTION=deep_check", "HEALTHD_NODE=" + sanitize(e.node, 255),
                                  "HEALTHD_CODE=" + sanitize(e.code, 120), "HEALTHD_REASON=" + sanitize(e.reason, 1000)};
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(cure.deep_check_timeout);
  const std::string program = argv.front();  // argv moves to the thread
  if (auto started = services.programs.start(e.id, std::move(argv), std::move(env), timeout); !started)
    return std::unexpected("deep check: " + started.error());
  spdlog::info("node {}: deep check before it returns: {}", e.node, program);
  if (own->cure) own->cure->last = "deep check running";
  return std::optional<Carried>();
}

// Why the run failed; empty when it passed.
std::string deep_check_failure(const ProgramRuns::Run& run, std::chrono::seconds timeout) {
  if (!run) return "did not run: " + sanitize(run.error(), 200);
  if (run->timed_out) return "no result within " + std::to_string(timeout.count()) + " s";
  if (run->signaled || run->exit_code != 0) {
    const std::string said = first_output_line(*run);
    return (run->signaled ? std::string("killed by a signal") : "exit " + std::to_string(run->exit_code)) +
           (said.empty() ? "" : ": " + said);
  }
  return {};
}

// What the deep check came to: passed, the next healthy sweep returns the node (a fault found
// meanwhile keeps it out); failed, the node stays out, held, with the test's message: the admin decides.
void deep_check_finished(const ExecutorServices& services, const JournalEntry& e, const ProgramRuns::Run& run, WallTime now) {
  auto& own = services.journal.own_drain();
  const std::string failure = deep_check_failure(run, services.policy.cure.deep_check_timeout);
  if (!own->cure) own->cure = CureProgress{};
  if (failure.empty()) {
    own->cure->deep_checked = true;
    own->cure->last = "deep check passed";
    spdlog::info("node {}: deep check passed; the next healthy sweep returns it", e.node);
    cure_notice(services, "deep check passed on " + e.node, Action::deep_check, now);
    return;
  }
  const std::string reason = truncate_utf8(std::string(kReasonPrefix) + " DEEP-CHECK: " + failure, 240);
  spdlog::error("node {}: deep check failed ({}); it stays out until an admin resumes it", e.node, failure);
  auto info = services.slurm.node(e.node);
  if (info && info->drained_or_draining() && info->reason.starts_with(kReasonPrefix))
    if (auto r = services.slurm.set_reason(e.node, reason); !r)
      spdlog::error("node {}: reason not set: {}", e.node, r.error().message);
  own->reason = reason;
  own->held = true;
  own->cure->last = "deep check failed: " + failure;
  cure_notice(services, "deep check failed on " + e.node + ": " + failure + "; the node stays out", Action::deep_check, now);
}

}  // namespace

std::expected<Carried, std::string> carry_out_deep_check(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  auto& own = services.journal.own_drain();
  if (!own || services.policy.cure.deep_check.empty()) {
    services.programs.forget(e.id);
    if (own) {
      // Turned off meanwhile: the node returns as it would without one.
      JournalEntry resume = e;
      resume.kind = Action::resume;
      resume.next_try = now;
      if (auto r = services.journal.add(std::move(resume)); !r) spdlog::error("journal: {}", r.error());
    }
    return Carried{};
  }
  if (!services.programs.running(e.id)) {
    auto started = start_deep_check(services, e, now);
    if (!started) return std::unexpected(started.error());
    if (*started) return **started;  // not started: the entry's answer now
  }
  auto run = services.programs.take(e.id);
  if (!run) {
    services.journal.wait_until(e.id, now + kRunningRecheck, "deep check running");
    return Carried{.finished = false};
  }
  deep_check_finished(services, e, *run, now);
  return Carried{.acted = Action::deep_check};
}

}  // namespace ar::healthd
