// The metrics as a node_exporter textfile-collector file ([metrics] textfile), rewritten every
// interval by a thread of its own: node_exporter reads whatever *.prom file is there at its scrape, so
// the file is replaced whole (a temp file beside it, renamed over it), never seen half written.
// A write that fails (the directory gone, the disk full) is logged, at most once per
// kFailureLogEvery with the count of failures since, and tried again at the next interval: the
// metrics are never a reason for healthd to stop.
#pragma once

#include <chrono>
#include <condition_variable>
#include <expected>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ar::healthd {

// Writes `text` to `file` through `file.tmp` in the same directory (made anew, never opened through
// a link), mode 0644: node_exporter runs as a user of its own and must read it. An error names the
// file and the step.
std::expected<void, std::string> write_textfile(const std::filesystem::path& file, const std::string& text);

class TextfileWriter {
 public:
  static constexpr std::chrono::minutes kFailureLogEvery{10};

  // Writes `text()` now and then every `interval`, until stop().
  TextfileWriter(std::filesystem::path file, std::chrono::seconds interval, std::function<std::string()> text);
  ~TextfileWriter();  // stop()
  TextfileWriter(const TextfileWriter&) = delete;
  TextfileWriter& operator=(const TextfileWriter&) = delete;

  // Writes the file a last time and joins the thread.
  void stop();

 private:
  void loop();
  void write_once();

  std::filesystem::path file_;
  std::chrono::seconds interval_;
  std::function<std::string()> text_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  // Writer thread only: the failure log's rate limit.
  std::uint64_t failures_ = 0;
  std::chrono::steady_clock::time_point last_logged_{};
  bool failing_ = false;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace ar::healthd
