// The admin's programs that executors run for journal entries (a [[policy.hook]], the cure's deep
// check): each on a thread of its own (background_runs.hpp), keyed by the entry it carries out, that
// the engine starts and never waits for; a run's end wakes its entry. One service for every executor
// that runs a program (actions/executor.hpp), so none keeps runs of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actions/background_runs.hpp"
#include "runtime/process.hpp"

namespace ar::healthd {

// Runs one program: argv (no shell), extra NAME=value environment, deadline. Tests give their own.
using HookRunner = std::function<std::expected<ProcessResult, std::string>(
    const std::vector<std::string>& argv, const std::vector<std::string>& env, std::chrono::milliseconds timeout)>;

class ProgramRuns {
 public:
  // A program's run: its result, or why it did not run.
  using Run = std::expected<ProcessResult, std::string>;

  // `runner` empty: run_process, its output bounded at 64 KiB.
  explicit ProgramRuns(HookRunner runner = {}) : runner_(std::move(runner)) {}

  bool running(std::uint64_t entry) const { return runs_.running(entry); }
  bool any_running() const { return runs_.any_running(); }
  // Where each run's end is posted (background_runs.hpp).
  void report_ends_to(std::shared_ptr<RunsEnded> ended) { runs_.report_ends_to(std::move(ended)); }

  // Starts `argv` for journal entry `entry`. An error only when no thread could be made.
  std::expected<void, std::string> start(std::uint64_t entry, std::vector<std::string> argv, std::vector<std::string> env,
                                         std::chrono::milliseconds timeout) {
    return runs_.start(entry, [runner = runner_, argv = std::move(argv), env = std::move(env), timeout]() -> Run {
      return runner ? runner(argv, env, timeout) : run_process(argv, timeout, 64 * 1024, env);
    });
  }

  // The run's result once it ended (then forgotten); nothing while it runs or when none was started.
  std::optional<Run> take(std::uint64_t entry) { return runs_.take(entry); }

  // Stops following the run of `entry` (its entry ended another way); the program finishes on its own.
  void forget(std::uint64_t entry) { runs_.forget(entry); }

 private:
  HookRunner runner_;
  BackgroundRuns<Run> runs_{[](const std::string& what) -> Run { return std::unexpected(what); }};
};

}  // namespace ar::healthd
