// Periodic work on the event loop (sweeps, polls, pruning), through one helper: each task re-arms its
// own timer after it ran, and stop() cancels them all in one place.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include <asio.hpp>

namespace ar::healthd {

class PeriodicTasks {
 public:
  explicit PeriodicTasks(asio::io_context& io) : io_(io) {}
  PeriodicTasks(const PeriodicTasks&) = delete;
  PeriodicTasks& operator=(const PeriodicTasks&) = delete;

  // Runs `task` on the event loop every `every`; the first time once the loop runs (first_now) or
  // one period from now. A period of 0 is no task at all.
  void every(std::chrono::milliseconds every, std::function<void()> task, bool first_now = false);
  // The same with a period read again at each re-arm (a reloaded config's check_interval_s).
  void every(std::function<std::chrono::milliseconds()> period, std::function<void()> task, bool first_now = false);
  // Cancels every task; none runs again.
  void stop();

 private:
  struct Task {
    Task(asio::io_context& io, std::function<std::chrono::milliseconds()> every, std::function<void()> fn)
        : timer(io), period(std::move(every)), run(std::move(fn)) {}
    asio::steady_timer timer;
    std::function<std::chrono::milliseconds()> period;
    std::function<void()> run;
  };
  void arm(Task& task);

  asio::io_context& io_;
  std::vector<std::unique_ptr<Task>> tasks_;
  bool stopped_ = false;
};

}  // namespace ar::healthd
