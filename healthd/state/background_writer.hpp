// Writes a state file on a thread of its own. The event loop answers the plugin, which waits for each
// reply; an fsync can take milliseconds on a busy disk, and messages arriving meanwhile would wait
// behind it. The loop hands over the newest text (or a function that makes it, called on the writer
// thread); the writer writes it atomically (write_file_atomically); texts handed over while a write
// runs collapse into the newest one, which is what a restart needs.
//
// A write that fails (a full or read-only filesystem) is not dropped: the newest text stays pending
// and is tried again every `retry_every` until it lands, so the file is current again within that
// time once space is freed. The failure is logged once per episode, and its end too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ar::healthd {

class BackgroundWriter {
 public:
  using Producer = std::function<std::string()>;

  explicit BackgroundWriter(std::filesystem::path file,
                            std::chrono::milliseconds retry_every = std::chrono::milliseconds(1000));
  ~BackgroundWriter();  // writes what is pending (one try), then stops
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  void submit(std::string text);
  // The text is made on the writer thread, when it is about to write: callers that change often
  // pay for one serialisation per write, not per change.
  void submit(Producer make_text);
  // Waits until everything submitted so far is on disk, or its write failed once (shutdown, tests).
  void flush();
  // Whether the newest text is on disk (false while a failed write waits for its retry).
  bool current() const;

 private:
  void run();

  std::filesystem::path file_;
  std::chrono::milliseconds retry_every_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  Producer pending_;
  bool writing_ = false;
  bool failing_ = false;    // the last write failed: pending_ holds what is to be retried
  std::uint64_t tries_ = 0; // writes attempted, for flush()
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ar::healthd
