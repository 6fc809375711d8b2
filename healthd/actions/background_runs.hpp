// Work the engine starts and polls but never waits for (a GPU reset, a deep check, an admin's hook):
// each runs on a detached thread of its own, keyed by the journal entry it carries out. A program may
// take its whole timeout, NVML may hang on a wedged GPU; the engine goes on sweeping and releasing
// requeued jobs meanwhile, and asks again on the entry's next try. At exit the process ends a thread
// still running, as it would a child; its own deadline bounds it otherwise.
#pragma once

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

namespace ar::healthd {

template <class Result>
class BackgroundRuns {
 public:
  // What a run that threw comes to (its exception's message): a Result, so the poller sees a failure.
  using OnThrow = std::function<Result(const std::string& what)>;

  explicit BackgroundRuns(OnThrow on_throw) : on_throw_(std::move(on_throw)) {}

  bool running(std::uint64_t id) const { return runs_.contains(id); }

  // Starts `work` for entry `id`. An error only when no thread could be made (nothing runs then).
  std::expected<void, std::string> start(std::uint64_t id, std::function<Result()> work) {
    auto slot = std::make_shared<Slot>();
    try {
      std::thread([slot, work = std::move(work), on_throw = on_throw_] {
        std::optional<Result> r;
        try {
          r.emplace(work());
        } catch (const std::exception& ex) {
          r.emplace(on_throw(ex.what()));
        }
        std::lock_guard lock(slot->mutex);
        slot->result = std::move(r);
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
  std::map<std::uint64_t, std::shared_ptr<Slot>> runs_;
};

}  // namespace ar::healthd
