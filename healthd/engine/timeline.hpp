// What happened to each job on this node, in order: the record behind `healthctl explain JOBID`.
// Kept on disk (bounded to the newest jobs) so a restart keeps the story.
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

namespace ar::healthd {

struct TimelineEvent {
  std::chrono::system_clock::time_point at;
  std::string node;
  std::string event;   // "fault seen", "drained", "requeued", "running again", ...
  std::string detail;
};

class Timeline {
 public:
  explicit Timeline(std::filesystem::path file, std::size_t max_jobs = 500)
      : file_(std::move(file)), max_jobs_(max_jobs) {}

  std::expected<void, std::string> load();
  void record(std::uint32_t job_id, TimelineEvent e);  // persists; errors are logged
  std::vector<TimelineEvent> events(std::uint32_t job_id) const;
  bool has_event(std::uint32_t job_id, const std::string& event) const;
  nlohmann::json to_json(std::uint32_t job_id) const;

 private:
  std::expected<void, std::string> save_locked() const;

  mutable std::mutex mutex_;
  std::filesystem::path file_;
  std::size_t max_jobs_;
  std::map<std::uint32_t, std::vector<TimelineEvent>> jobs_;
};

}  // namespace ar::healthd
