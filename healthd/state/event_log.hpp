// The node's recent notices, newest last: the record behind `healthctl events` (incidents, drains,
// requeues, resumes, admin actions). A NoticeSink: notify() is called on the engine thread, events()
// on the event loop. Kept on disk (events.json in the state directory, the newest `max_events`) by a
// writer thread of its own, so a restart keeps the story and no caller waits for an fsync.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <expected>
#include <filesystem>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "state/background_writer.hpp"
#include "vocabulary/notice.hpp"

namespace ar::healthd {

class EventLog final : public NoticeSink {
 public:
  explicit EventLog(std::filesystem::path file, std::size_t max_events = 500)
      : file_(file), max_events_(max_events), writer_(std::move(file)) {}

  // A file that does not parse is an error (the daemon moves it aside); an event in it that does
  // not is dropped alone. Past max_events, only the newest are kept.
  std::expected<void, std::string> load();
  void notify(const Notice& n) noexcept override;
  // The newest `limit` events, newest first.
  nlohmann::json events(std::size_t limit) const;
  void flush() { writer_.flush(); }

  static nlohmann::json to_json(const Notice& n);

 private:
  std::string serialize() const;

  mutable std::mutex mutex_;
  std::filesystem::path file_;
  std::size_t max_events_;
  std::deque<Notice> events_;
  BackgroundWriter writer_;  // last: it may call serialize() until it is destroyed
};

}  // namespace ar::healthd
