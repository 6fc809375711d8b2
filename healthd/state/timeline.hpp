// What happened to each job on this node, in order: the record behind `healthctl explain JOBID`.
// Kept on disk (bounded to the newest jobs, and to the first and the newest events of each) so a
// restart keeps the story. record() is called from the event loop and the engine thread; the file
// is written by a writer thread of its own, so no caller waits for an fsync, and changes that come
// in a burst are written once.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "state/background_writer.hpp"

namespace ar::healthd {

struct TimelineEvent {
  std::chrono::system_clock::time_point at;
  std::string node;
  std::string event;   // "fault seen", "drained", "requeued", "running again", ...
  std::string detail;
};

class Timeline {
 public:
  explicit Timeline(std::filesystem::path file, std::size_t max_jobs = 500, std::size_t max_events_per_job = 64)
      : file_(file), max_jobs_(max_jobs), max_events_(max_events_per_job), writer_(std::move(file)) {}

  std::expected<void, std::string> load();
  // Adds an event and hands the timeline to its writer. Past max_events_per_job the oldest events
  // after the first few go (the start of the story and its end are what explain needs).
  void record(std::uint32_t job_id, TimelineEvent e);
  void flush() { writer_.flush(); }
  std::vector<TimelineEvent> events(std::uint32_t job_id) const;
  bool has_event(std::uint32_t job_id, const std::string& event) const;
  nlohmann::json to_json(std::uint32_t job_id) const;

 private:
  std::string serialize() const;

  mutable std::mutex mutex_;
  std::filesystem::path file_;
  std::size_t max_jobs_;
  std::size_t max_events_;
  std::map<std::uint32_t, std::vector<TimelineEvent>> jobs_;
  BackgroundWriter writer_;  // last: it may call serialize() until it is destroyed
};

}  // namespace ar::healthd
