// The admin's hooks ([[policy.hook]]): journalled after an action healthd carried out, each run on a
// thread of its own that the engine polls, never waits for (program_runs.hpp).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "config/fields.hpp"
#include "text/text.hpp"

namespace ar::healthd {

void journal_hooks_after(const PolicyConfig& policy, Journal& journal, const JournalEntry& done, Action what, WallTime now) {
  for (const auto& hook : policy.hooks) {
    if (std::find(hook.on.begin(), hook.on.end(), what) == hook.on.end()) continue;
    // An action journalled before report_only was set is finished, but runs no admin program.
    if (policy.report_only) {
      spdlog::warn("report only: would run hook {} after {} ({} on {}); nothing run", hook.name, to_string(what), done.code, done.node);
      continue;
    }
    JournalEntry e = due_entry(Action::hook, done.node, done.code, now);
    e.job_id = done.job_id;
    e.restart_count = done.restart_count;
    e.reason = done.reason;
    e.hook = hook.name;
    e.done = what;
    if (auto r = journal.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
  }
}

namespace {

// What a run that ended came to: nothing when the hook succeeded, else why it failed (retried).
std::optional<std::string> hook_failure(const HookConfig& hook, const ProgramRuns::Run& run) {
  if (!run) return "hook " + hook.name + ": " + run.error();
  if (run->timed_out) return "hook " + hook.name + ": no exit within " + std::to_string(hook.timeout.count()) + " s";
  if (run->signaled || run->exit_code != 0)
    return "hook " + hook.name + ": " + (run->signaled ? std::string("killed by a signal") : "exit " + std::to_string(run->exit_code)) +
           (run->err.empty() ? "" : ": " + sanitize(run->err, 200));
  return std::nullopt;
}

// Starts the hook's program for `e`, its words and environment filled in.
std::expected<void, std::string> start_hook(const ExecutorServices& services, const HookConfig& hook, const JournalEntry& e) {
  std::vector<std::string> argv;
  for (const auto& word : hook.command) argv.push_back(expand_node_name(word, e.node));
  // The values come from Slurm and from check messages: one line each, no NUL (sanitize).
  std::vector<std::string> env = {"HEALTHD_ACTION=" + to_string(e.done), "HEALTHD_NODE=" + sanitize(e.node, 255),
                                  "HEALTHD_CODE=" + sanitize(e.code, 120), "HEALTHD_REASON=" + sanitize(e.reason, 1000),
                                  "HEALTHD_JOB_ID=" + std::to_string(e.job_id)};
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(hook.timeout);
  if (auto started = services.programs.start(e.id, std::move(argv), std::move(env), timeout); !started)
    return std::unexpected("hook " + hook.name + ": " + started.error());
  return {};
}

}  // namespace

std::expected<Carried, std::string> carry_out_hook(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  const auto& hooks = services.policy.hooks;
  auto hook = std::find_if(hooks.begin(), hooks.end(), [&](const HookConfig& h) { return h.name == e.hook; });
  if (hook == hooks.end()) {
    spdlog::warn("hook '{}': no longer in the config; not run", sanitize(e.hook, 80));
    return Carried{};
  }
  if (e.attempts >= hook->attempts) {
    spdlog::error("hook '{}' after {} on {}: gave up after {} tries: {}", hook->name, to_string(e.done), e.node, e.attempts,
                  e.last_error);
    if (e.job_id != 0)
      services.timeline.record(e.job_id, {now, services.node, "hook failed",
                                          hook->name + " after " + to_string(e.done) + ": " + e.last_error});
    return Carried{};
  }
  if (!services.programs.running(e.id))
    if (auto started = start_hook(services, *hook, e); !started) return std::unexpected(started.error());
  auto run = services.programs.take(e.id);
  if (!run) {
    services.journal.wait_until(e.id, now + kRunningRecheck, "hook " + hook->name + " running");
    return Carried{.finished = false};
  }
  if (auto failure = hook_failure(*hook, *run)) return std::unexpected(*failure);
  spdlog::info("hook '{}' ran after {} on {}", hook->name, to_string(e.done), e.node);
  if (e.job_id != 0) services.timeline.record(e.job_id, {now, services.node, "hook ran", hook->name + " after " + to_string(e.done)});
  return Carried{};
}

}  // namespace ar::healthd
