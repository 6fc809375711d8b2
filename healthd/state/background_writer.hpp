// Writes a state file on a thread of its own. The event loop answers the plugin, which waits for each
// reply; an fsync can take milliseconds on a busy disk, and messages arriving meanwhile would wait
// behind it. The loop hands over the newest text; the writer writes it atomically (write_file_atomically);
// texts handed over while a write runs collapse into the newest one, which is what a restart needs.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace ar::healthd {

class BackgroundWriter {
 public:
  explicit BackgroundWriter(std::filesystem::path file);
  ~BackgroundWriter();  // writes what is pending, then stops
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  void submit(std::string text);
  // Waits until everything submitted so far is on disk (shutdown, tests).
  void flush();

 private:
  void run();

  std::filesystem::path file_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::optional<std::string> pending_;
  bool writing_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ar::healthd
