// Runs blocking calls (Slurm's C API: every call is an RPC to slurmctld) on a thread of their own, one
// at a time, each bounded by a deadline. A slurmctld that stops answering costs the caller the
// deadline, never more: the engine's thread goes on with checks and the socket, and the journal
// retries the action later.
//
// A call past its deadline cannot be cancelled (libslurm has no cancel); it goes on running on the
// worker, and every call until it returns is refused at once, so one stuck call holds one thread,
// never a pile of them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace ar::healthd {

class BoundedCaller {
 public:
  explicit BoundedCaller(std::chrono::milliseconds deadline);
  ~BoundedCaller();
  BoundedCaller(const BoundedCaller&) = delete;
  BoundedCaller& operator=(const BoundedCaller&) = delete;

  std::chrono::milliseconds deadline() const { return deadline_; }

  // fn's value, or why there is none: it did not return within the deadline, or an earlier call
  // still has not returned. `what` names the call in that message.
  template <class T>
  std::expected<T, std::string> run(const std::string& what, std::function<T()> fn) {
    auto slot = std::make_shared<std::optional<T>>();
    auto job = [fn = std::move(fn), slot, state = state_.get()]() mutable {
      T value = fn();
      std::lock_guard lock(state->mutex);
      *slot = std::move(value);
    };
    if (auto refused = submit(what, std::move(job))) return std::unexpected(*refused);
    std::unique_lock lock(state_->mutex);
    if (!state_->changed.wait_for(lock, deadline_, [&] { return slot->has_value(); }))
      return std::unexpected(what + ": Slurm did not answer within " + std::to_string(deadline_.count()) + " ms");
    return std::move(**slot);
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::function<void()> job;  // the call to make; empty when none is waiting
    bool busy = false;          // a call is submitted and has not returned
    std::string busy_what;
    std::chrono::steady_clock::time_point busy_since;
    bool stop = false;
  };
  // Hands `job` to the worker; the reason when it cannot take it now.
  std::optional<std::string> submit(const std::string& what, std::function<void()> job);
  static void work(std::shared_ptr<State> state);

  std::chrono::milliseconds deadline_;
  std::shared_ptr<State> state_;  // shared with the worker, which may outlive this object if stuck
  std::thread worker_;
};

}  // namespace ar::healthd
