#include "timeline.hpp"


#include <spdlog/spdlog.h>

#include "state/atomic_file.hpp"

namespace ar::healthd {
std::expected<void, std::string> Timeline::load() {
  std::lock_guard lock(mutex_);
  auto read = read_json_file(file_);
  if (!read) return std::unexpected(read.error());
  const auto& j = *read;
  if (j.is_null()) return {};
  try {
    jobs_.clear();
    for (const auto& [id, events] : j.at("jobs").items())
      for (const auto& e : events)
        jobs_[static_cast<std::uint32_t>(std::stoul(id))].push_back(
            {std::chrono::system_clock::time_point(std::chrono::milliseconds(e.at("at_ms").get<std::int64_t>())),
             e.at("node").get<std::string>(), e.at("event").get<std::string>(), e.at("detail").get<std::string>()});
  } catch (const std::exception& e) {
    return std::unexpected(file_.string() + ": bad content: " + e.what());
  }
  return {};
}

std::expected<void, std::string> Timeline::save_locked() const {
  nlohmann::json jobs = nlohmann::json::object();
  for (const auto& [id, events] : jobs_) {
    auto& arr = jobs[std::to_string(id)] = nlohmann::json::array();
    for (const auto& e : events)
      arr.push_back({{"at_ms", to_epoch_ms(e.at)}, {"node", e.node}, {"event", e.event}, {"detail", e.detail}});
  }
  return write_file_atomically(file_, nlohmann::json{{"version", 1}, {"jobs", jobs}}.dump());
}

void Timeline::record(std::uint32_t job_id, TimelineEvent e) {
  std::lock_guard lock(mutex_);
  spdlog::info("job {}: {}{}{}", job_id, e.event, e.detail.empty() ? "" : ": ", e.detail);
  jobs_[job_id].push_back(std::move(e));
  while (jobs_.size() > max_jobs_) jobs_.erase(jobs_.begin());  // job ids grow: the oldest go first
  if (auto r = save_locked(); !r) spdlog::error("timeline: {}", r.error());
}

std::vector<TimelineEvent> Timeline::events(std::uint32_t job_id) const {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? std::vector<TimelineEvent>{} : it->second;
}

bool Timeline::has_event(std::uint32_t job_id, const std::string& event) const {
  for (const auto& e : events(job_id))
    if (e.event == event) return true;
  return false;
}

nlohmann::json Timeline::to_json(std::uint32_t job_id) const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : events(job_id))
    out.push_back({{"at_ms", to_epoch_ms(e.at)}, {"node", e.node}, {"event", e.event}, {"detail", e.detail}});
  return out;
}

}  // namespace ar::healthd
