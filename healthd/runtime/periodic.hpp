// Periodic work on the event loop (sweeps, polls, pruning), through one helper: each task re-arms its
// own timer after it ran, and stop() cancels them all in one place.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include <asio.hpp>

namespace ar::healthd {

class PeriodicTasks {
 public:
  explicit PeriodicTasks(asio::io_context& io) : io_(io) {}
  PeriodicTasks(const PeriodicTasks&) = delete;
  PeriodicTasks& operator=(const PeriodicTasks&) = delete;

  // Where in its period a task's runs fall. aligned: one period after start (or after the first run).
  // spread: the first wait is a random part of the period, so the daemons of a fleet restarted in the
  // same second (a fleet-wide `systemctl restart`) do not run their sweeps, and hit what the sweeps
  // read (a shared checkpoint filesystem), in the same second ever after.
  enum class Phase { aligned, spread };

  // Runs `task` on the event loop every `every`; the first time once the loop runs (first_now) or
  // after one period (or a random part of it: Phase::spread). A period of 0 is no task at all.
  void every(std::chrono::milliseconds every, std::function<void()> task, bool first_now = false,
             Phase phase = Phase::aligned);
  // The same with a period read again at each re-arm (a reloaded config's check_interval_s).
  void every(std::function<std::chrono::milliseconds()> period, std::function<void()> task, bool first_now = false,
             Phase phase = Phase::aligned);
  // Cancels every task; none runs again.
  void stop();

 private:
  struct Task {
    Task(asio::io_context& io, std::function<std::chrono::milliseconds()> every, std::function<void()> fn)
        : timer(io), period(std::move(every)), run(std::move(fn)) {}
    asio::steady_timer timer;
    std::function<std::chrono::milliseconds()> period;
    std::function<void()> run;
    bool spread_next = false;  // the next wait is a random part of the period (once)
  };
  void arm(Task& task);

  asio::io_context& io_;
  std::vector<std::unique_ptr<Task>> tasks_;
  bool stopped_ = false;
  std::minstd_rand rng_{std::random_device{}()};
};

// The first wait of a Phase::spread task: uniform in [1 ms, period].
std::chrono::milliseconds spread_phase(std::chrono::milliseconds period, std::minstd_rand& rng);

}  // namespace ar::healthd
