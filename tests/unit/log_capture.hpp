// Captures what the daemon logs through spdlog's default logger for the length of a test.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace ar::test {

// Keeps every formatted line; read from the test's thread while the loop's thread logs.
class StringSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    text_.append(formatted.data(), formatted.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    sink_ = std::make_shared<StringSink>();
    sink_->set_pattern("[%l] %v");
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() { return sink_->text(); }
  std::size_t lines() {
    auto t = text();
    return static_cast<std::size_t>(std::count(t.begin(), t.end(), '\n'));
  }
  std::size_t count(const std::string& needle) {
    auto t = text();
    std::size_t n = 0;
    for (auto pos = t.find(needle); pos != std::string::npos; pos = t.find(needle, pos + needle.size())) ++n;
    return n;
  }

 private:
  std::shared_ptr<StringSink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace ar::test
