// Watches NVML's event set for critical XIDs and double-bit ECC errors as they happen, on a thread of
// its own (nvmlEventSetWait blocks; with a GPU gone it may block for good, so this thread is never
// the one anything else waits on). Events are handed to a sink; only events from now on arrive.
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <spdlog/common.h>

namespace ar::healthd {

struct NvmlEvent {
  unsigned xid = 0;          // for a double-bit ECC event: 48, the XID the driver logs for one
  bool double_bit_ecc = false;
  unsigned gpu_index = 0;
  std::string bus_id;        // "00000000:18:00.0"
};

class NvmlEventWatcher {
 public:
  using Sink = std::function<void(const NvmlEvent&)>;

  NvmlEventWatcher(std::string library_path, Sink sink) : path_(std::move(library_path)), sink_(std::move(sink)) {}
  ~NvmlEventWatcher() { stop(); }

  void start();
  // Stops within a second unless the thread is stuck inside NVML; then it is left behind (detached)
  // and this returns false: the watcher must then outlive its thread (not be destroyed).
  bool stop();

  // Why events are not being watched, if they are not (no library, no event support): for status.
  std::string problem() const;

 private:
  void run();
  // Sleeps `seconds`, in steps that notice stop().
  void pause(int seconds);
  // Hands an event to the sink; a sink that throws loses that event, not the watcher.
  void deliver(const NvmlEvent& e);
  void set_problem(std::string p, spdlog::level::level_enum level = spdlog::level::warn);

  std::string path_;
  Sink sink_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::string problem_;
  std::thread thread_;
  bool detached_ = false;  // stop() left the thread behind
  std::future<void> exited_;
};

}  // namespace ar::healthd
