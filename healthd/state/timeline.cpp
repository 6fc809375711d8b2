#include "timeline.hpp"


#include <spdlog/spdlog.h>

#include "state/atomic_file.hpp"
#include "state/json_fields.hpp"

namespace ar::healthd {
std::expected<void, std::string> Timeline::load() {
  std::lock_guard lock(mutex_);
  auto read = read_json_file(file_);
  if (!read) return std::unexpected(read.error());
  const auto& j = *read;
  if (j.is_null()) return {};
  try {
    jobs_.clear();
    for (const auto& [id, events] : j.at("jobs").items()) {
      const auto job_id = json_fields::integer_text<std::uint32_t>(id, "jobs");
      for (const auto& e : events)
        jobs_[job_id].push_back({json_fields::time_ms(e, "at_ms"), e.at("node").get<std::string>(),
                                 e.at("event").get<std::string>(), e.at("detail").get<std::string>()});
    }
  } catch (const std::exception& e) {
    return std::unexpected(file_.string() + ": bad content: " + e.what());
  }
  return {};
}

std::string Timeline::serialize() const {
  std::lock_guard lock(mutex_);
  nlohmann::json jobs = nlohmann::json::object();
  for (const auto& [id, events] : jobs_) {
    auto& arr = jobs[std::to_string(id)] = nlohmann::json::array();
    for (const auto& e : events)
      arr.push_back({{"at_ms", to_epoch_ms(e.at)}, {"node", e.node}, {"event", e.event}, {"detail", e.detail}});
  }
  return dump_state(nlohmann::json{{"version", 1}, {"jobs", jobs}});
}

void Timeline::record(std::uint32_t job_id, TimelineEvent e) {
  spdlog::info("job {}: {}{}{}", job_id, e.event, e.detail.empty() ? "" : ": ", e.detail);
  std::lock_guard lock(mutex_);
  auto& events = jobs_[job_id];
  events.push_back(std::move(e));
  constexpr std::size_t kKeepFirst = 8;
  if (events.size() > max_events_ && max_events_ > kKeepFirst)
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(kKeepFirst));
  while (jobs_.size() > max_jobs_) jobs_.erase(jobs_.begin());  // job ids grow: the oldest go first
  writer_.submit([this] { return serialize(); });
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
