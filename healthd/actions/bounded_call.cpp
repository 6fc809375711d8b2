#include "bounded_call.hpp"

namespace ar::healthd {

BoundedCaller::BoundedCaller(std::chrono::milliseconds deadline)
    : deadline_(deadline), state_(std::make_shared<State>()), worker_(work, state_) {}

BoundedCaller::~BoundedCaller() {
  bool stuck;
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
    stuck = state_->busy;
  }
  state_->changed.notify_all();
  // A worker inside a call that never returns cannot be joined; it keeps the state alive itself and
  // ends when (if) the call returns.
  if (stuck) worker_.detach();
  else worker_.join();
}

std::optional<std::string> BoundedCaller::submit(const std::string& what, std::function<void()> job) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->busy) {
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                         state_->busy_since);
      return what + ": Slurm did not answer (an earlier call, " + state_->busy_what + ", has not returned after " +
             std::to_string(secs.count()) + " s)";
    }
    state_->busy = true;
    state_->busy_what = what;
    state_->busy_since = std::chrono::steady_clock::now();
    state_->job = std::move(job);
  }
  state_->changed.notify_all();
  return std::nullopt;
}

void BoundedCaller::work(std::shared_ptr<State> state) {
  std::unique_lock lock(state->mutex);
  for (;;) {
    state->changed.wait(lock, [&] { return state->stop || state->job; });
    if (!state->job) return;  // stopped, nothing left to run
    auto job = std::move(state->job);
    state->job = nullptr;
    lock.unlock();
    job();
    lock.lock();
    state->busy = false;
    state->changed.notify_all();
    if (state->stop) return;
  }
}

}  // namespace ar::healthd
