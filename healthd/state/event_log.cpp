#include "state/event_log.hpp"

#include <spdlog/spdlog.h>

#include "state/atomic_file.hpp"
#include "state/json_fields.hpp"
#include "text/text.hpp"

namespace ar::healthd {

nlohmann::json EventLog::to_json(const Notice& n) {
  nlohmann::json j = {{"at_ms", to_epoch_ms(n.at)}, {"kind", to_string(n.kind)}, {"node", n.node},
                      {"job_id", n.job_id},          {"attempt", n.attempt},      {"code", n.code},
                      {"message", n.message},        {"action", n.action}};
  j["uid"] = n.uid ? nlohmann::json(*n.uid) : nlohmann::json(nullptr);
  if (n.request != 0) j["request"] = n.request;
  return j;
}

std::expected<void, std::string> EventLog::load() {
  auto read = read_json_file(file_);
  if (!read) return std::unexpected(read.error());
  const auto& j = *read;
  if (j.is_null()) return {};
  if (!j.is_object() || !j.contains("events") || !j["events"].is_array())
    return std::unexpected(file_.string() + ": bad content: no \"events\" array");
  std::lock_guard lock(mutex_);
  events_.clear();
  std::size_t dropped = 0;
  for (const auto& e : j["events"]) {
    try {
      Notice n;
      auto kind = notice_kind_from_string(e.at("kind").get<std::string>());
      if (!kind) throw std::runtime_error("unknown kind");
      n.kind = *kind;
      n.at = json_fields::time_ms(e, "at_ms");
      // Bounded and one line, whoever wrote the file.
      n.node = sanitize(e.at("node").get<std::string>(), 255);
      n.job_id = e.at("job_id").get<std::uint32_t>();
      n.attempt = e.at("attempt").get<std::uint32_t>();
      n.code = sanitize(e.at("code").get<std::string>(), 120);
      n.message = sanitize(e.at("message").get<std::string>(), 1000);
      n.action = sanitize(e.at("action").get<std::string>(), 40);
      if (e.contains("uid") && !e["uid"].is_null()) n.uid = e["uid"].get<std::uint32_t>();
      if (e.contains("request")) n.request = e["request"].get<std::uint64_t>();
      events_.push_back(std::move(n));
    } catch (const std::exception&) {
      ++dropped;
    }
  }
  while (events_.size() > max_events_) events_.pop_front();
  if (dropped > 0) spdlog::error("state: {}: {} unreadable event(s) dropped", file_.string(), dropped);
  return {};
}

void EventLog::notify(const Notice& n) noexcept {
  try {
    std::lock_guard lock(mutex_);
    events_.push_back(n);
    while (events_.size() > max_events_) events_.pop_front();
    writer_.submit([this] { return serialize(); });
  } catch (const std::exception& e) {
    spdlog::error("events: {}", e.what());  // bad_alloc: the notice is not kept, nothing else is lost
  }
}

nlohmann::json EventLog::events(std::size_t limit) const {
  std::lock_guard lock(mutex_);
  nlohmann::json out = nlohmann::json::array();
  for (auto it = events_.rbegin(); it != events_.rend() && out.size() < limit; ++it) out.push_back(to_json(*it));
  return out;
}

std::string EventLog::serialize() const {
  // A copy under the lock, the JSON outside it: notify() on the engine thread and events() on the
  // event loop never wait for the writer's dump of 500 events.
  std::deque<Notice> copy;
  {
    std::lock_guard lock(mutex_);
    copy = events_;
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& n : copy) events.push_back(to_json(n));
  return dump_state(nlohmann::json{{"version", 1}, {"events", events}});
}

}  // namespace ar::healthd
