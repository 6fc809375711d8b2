// The admin's hooks ([[policy.hook]]): journalled after an action healthd carried out, each run on a
// thread of its own that the engine polls, never waits for (background_runs.hpp).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "config/fields.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<void, std::string> SlurmActions::start_program(BackgroundRuns<ProgramRun>& runs, std::uint64_t id,
                                                             std::vector<std::string> argv, std::vector<std::string> env,
                                                             std::chrono::milliseconds timeout) {
  return runs.start(id, [runner = run_hook_, argv = std::move(argv), env = std::move(env), timeout]() -> ProgramRun {
    return runner ? runner(argv, env, timeout) : run_process(argv, timeout, 64 * 1024, env);
  });
}

void SlurmActions::queue_hooks(const JournalEntry& done, Action what, WallTime now) {
  for (const auto& hook : policy_.hooks) {
    if (std::find(hook.on.begin(), hook.on.end(), what) == hook.on.end()) continue;
    // An action journalled before report_only was set is finished, but runs no admin program.
    if (policy_.report_only) {
      spdlog::warn("report only: would run hook {} after {} ({} on {}); nothing run", hook.name, to_string(what), done.code, done.node);
      continue;
    }
    JournalEntry e;
    e.kind = Action::hook;
    e.node = done.node;
    e.job_id = done.job_id;
    e.restart_count = done.restart_count;
    e.code = done.code;
    e.reason = done.reason;
    e.hook = hook.name;
    e.done = what;
    e.created = now;
    e.next_try = now;
    if (auto r = journal_.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
  }
}

std::expected<bool, std::string> SlurmActions::do_hook(const JournalEntry& e, WallTime now) {
  auto hook = std::find_if(policy_.hooks.begin(), policy_.hooks.end(), [&](const HookConfig& h) { return h.name == e.hook; });
  if (hook == policy_.hooks.end()) {
    spdlog::warn("hook '{}': no longer in the config; not run", sanitize(e.hook, 80));
    return true;
  }
  if (e.attempts >= hook->attempts) {
    spdlog::error("hook '{}' after {} on {}: gave up after {} tries: {}", hook->name, to_string(e.done), e.node, e.attempts,
                  e.last_error);
    if (e.job_id != 0)
      timeline_.record(e.job_id, {now, node_, "hook failed", hook->name + " after " + to_string(e.done) + ": " + e.last_error});
    return true;
  }
  if (!hooks_running_.running(e.id)) {
    std::vector<std::string> argv;
    for (const auto& word : hook->command) argv.push_back(expand_node_name(word, e.node));
    // The values come from Slurm and from check messages: one line each, no NUL (sanitize).
    std::vector<std::string> env = {"HEALTHD_ACTION=" + to_string(e.done), "HEALTHD_NODE=" + sanitize(e.node, 255),
                                    "HEALTHD_CODE=" + sanitize(e.code, 120), "HEALTHD_REASON=" + sanitize(e.reason, 1000),
                                    "HEALTHD_JOB_ID=" + std::to_string(e.job_id)};
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(hook->timeout);
    if (auto started = start_program(hooks_running_, e.id, std::move(argv), std::move(env), timeout); !started)
      return std::unexpected("hook " + hook->name + ": " + started.error());
  }
  auto run = hooks_running_.take(e.id);
  if (!run) {
    journal_.wait_until(e.id, now + std::chrono::milliseconds(200), "hook " + hook->name + " running");
    return false;
  }
  if (!*run) return std::unexpected("hook " + hook->name + ": " + run->error());
  if ((*run)->timed_out)
    return std::unexpected("hook " + hook->name + ": no exit within " + std::to_string(hook->timeout.count()) + " s");
  if ((*run)->signaled || (*run)->exit_code != 0)
    return std::unexpected("hook " + hook->name + ": " +
                           ((*run)->signaled ? std::string("killed by a signal") : "exit " + std::to_string((*run)->exit_code)) +
                           ((*run)->err.empty() ? "" : ": " + sanitize((*run)->err, 200)));
  spdlog::info("hook '{}' ran after {} on {}", hook->name, to_string(e.done), e.node);
  if (e.job_id != 0) timeline_.record(e.job_id, {now, node_, "hook ran", hook->name + " after " + to_string(e.done)});
  return true;
}

}  // namespace ar::healthd
