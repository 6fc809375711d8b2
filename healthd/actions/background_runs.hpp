// Work the engine starts but never waits for (a GPU reset, a deep check, an admin's hook): each runs
// on a detached thread of its own, keyed by the journal entry it carries out. A program may take its
// whole timeout, NVML may hang on a wedged GPU; the engine goes on sweeping and releasing requeued
// jobs meanwhile. When a run ends, its thread posts the entry's id to `RunsEnded`: an event that wakes
// the engine, which carries that entry out at once (its executor takes the result); the entry's own
// poll is only a safety net. At exit the process ends a thread still running, as it would a child;
// its own deadline bounds it otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace ar::healthd {

// How often an entry whose run goes on looks at it anyway: the run's end wakes the entry at once
// (RunsEnded), so this is a safety net, and what notices a run stuck past its limit.
inline constexpr std::chrono::seconds kRunningRecheck{5};

// The ids of the entries whose background run ended, posted from the runs' threads and taken on the
// engine thread. Shared with the threads, which may outlive the engine: once the engine is gone
// (set_wake with nothing), a post wakes no one.
class RunsEnded {
 public:
  void post(std::uint64_t entry) {
    std::lock_guard lock(mutex_);
    ended_.push_back(entry);
    if (wake_) wake_();
  }
  std::vector<std::uint64_t> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(ended_, {});
  }
  // What a post calls (under this mailbox's lock: it must not call back into it): the engine's wake.
  void set_wake(std::function<void()> wake) {
    std::lock_guard lock(mutex_);
    wake_ = std::move(wake);
  }

 private:
  std::mutex mutex_;
  std::vector<std::uint64_t> ended_;
  std::function<void()> wake_;
};

template <class Result>
class BackgroundRuns {
 public:
  // What a run that threw comes to (its exception's message): a Result, so the poller sees a failure.
  using OnThrow = std::function<Result(const std::string& what)>;

  explicit BackgroundRuns(OnThrow on_throw) : on_throw_(std::move(on_throw)) {}

  bool running(std::uint64_t id) const { return runs_.contains(id); }
  // Whether any run is followed (going, or ended and not yet taken).
  bool any_running() const { return !runs_.empty(); }

  // Where each run's end is posted (none: it is only polled).
  void report_ends_to(std::shared_ptr<RunsEnded> ended) { ended_ = std::move(ended); }

  // Starts `work` for entry `id`. An error only when no thread could be made (nothing runs then).
  std::expected<void, std::string> start(std::uint64_t id, std::function<Result()> work) {
    auto slot = std::make_shared<Slot>();
    try {
      std::thread([slot, work = std::move(work), on_throw = on_throw_, ended = ended_, id] {
        std::optional<Result> r;
        try {
          r.emplace(work());
        } catch (const std::exception& ex) {
          r.emplace(on_throw(ex.what()));
        }
        {
          std::lock_guard lock(slot->mutex);
          slot->result = std::move(r);
        }
        if (ended) ended->post(id);  // after the result is there to take
      }).detach();
    } catch (const std::system_error& ex) {
      return std::unexpected(std::string("no thread to run it on: ") + ex.what());
    }
    runs_[id] = std::move(slot);
    return {};
  }

  // The result once the run ended, and the run is forgotten; nothing while it runs or when none was
  // started for `id`.
  std::optional<Result> take(std::uint64_t id) {
    auto it = runs_.find(id);
    if (it == runs_.end()) return std::nullopt;
    std::optional<Result> r;
    {
      std::lock_guard lock(it->second->mutex);
      r = std::move(it->second->result);
    }
    if (r) runs_.erase(it);
    return r;
  }

  // Stops following the run of `id` (its entry ended another way); the thread finishes on its own.
  void forget(std::uint64_t id) { runs_.erase(id); }

 private:
  struct Slot {
    std::mutex mutex;
    std::optional<Result> result;
  };
  OnThrow on_throw_;
  std::shared_ptr<RunsEnded> ended_;
  std::map<std::uint64_t, std::shared_ptr<Slot>> runs_;
};

}  // namespace ar::healthd
