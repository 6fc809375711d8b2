#include "engine/stall_watch.hpp"

#include <memory>
#include <mutex>
#include <set>

#include <spdlog/spdlog.h>

#include "actions/bounded_call.hpp"

namespace ar::healthd {
namespace {

std::string seconds_text(StallClock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

}  // namespace

HeartbeatReader bounded_heartbeat_reader(std::chrono::milliseconds deadline) {
  // One caller per path (so one stuck read holds back only its own job), at most kMaxCallers; past
  // that, the rest share one. Used from the engine thread only; the mutex is for safety, not speed.
  constexpr std::size_t kMaxCallers = 64;
  struct Callers {
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<BoundedCaller>> by_path;
    std::shared_ptr<BoundedCaller> shared;
  };
  auto callers = std::make_shared<Callers>();
  callers->shared = std::make_shared<BoundedCaller>(deadline);
  return [callers, deadline](const std::string& path, std::uint32_t uid) {
    std::shared_ptr<BoundedCaller> caller;
    {
      std::lock_guard lock(callers->mutex);
      auto it = callers->by_path.find(path);
      if (it != callers->by_path.end()) caller = it->second;
      else if (callers->by_path.size() < kMaxCallers) caller = callers->by_path[path] = std::make_shared<BoundedCaller>(deadline);
      else caller = callers->shared;
    }
    auto r = caller->run<HeartbeatReading>("heartbeat", [path, uid] { return read_heartbeat_as_owner(path, uid); });
    if (r) return *r;
    return HeartbeatReading{std::nullopt, path + ": not read within " + std::to_string(deadline.count()) +
                                              " ms (a hung filesystem or user lookup?)"};
  };
}

const std::map<std::uint32_t, RankStep>& StallWatch::steps_of(std::uint32_t job_id) const {
  static const std::map<std::uint32_t, RankStep> none;
  const auto it = jobs_.find(job_id);
  return it == jobs_.end() ? none : it->second.steps;
}

std::vector<StallEvent> StallWatch::poll(const std::vector<WatchedJob>& jobs, StallClock::time_point now,
                                         std::chrono::seconds settle) {
  std::vector<StallEvent> out;
  std::set<std::uint32_t> listed;
  for (const auto& job : jobs) {
    listed.insert(job.job_id);
    auto [it, fresh] = jobs_.try_emplace(job.job_id);
    State& s = it->second;
    if (fresh || job.restart_count > s.restart_count || s.path != job.heartbeat.path) {
      s = State{};
      s.restart_count = job.restart_count;
      s.path = job.heartbeat.path;
      s.last_move = now;
    }
    if (s.confirmed) continue;
    auto event = [&](StallEvent::Kind kind, std::string message) {
      out.push_back({kind, job.job_id, job.restart_count, job.max_resumes, std::move(message), {}});
    };
    // Never read as root on a user's behalf: without its owner the heartbeat is not judged.
    auto reading = job.uid ? reader_(job.heartbeat.path, *job.uid)
                           : HeartbeatReading{std::nullopt, job.heartbeat.path + ": the job's owner is not known here"};
    if (!reading.error.empty()) {
      // Not judged: neither a beat nor a stall. The time goes on counting, so a heartbeat readable
      // again that has not moved is stalled then.
      if (reading.error != s.last_error) spdlog::warn("job {}: heartbeat not judged: {}", job.job_id, reading.error);
      s.last_error = reading.error;
      continue;
    }
    s.last_error.clear();
    if (s.read_once && reading.newest != s.last_value) {
      s.beat = true;
      s.last_move = now;
      if (s.stalled_at) event(StallEvent::Kind::moving_again, "heartbeat " + job.heartbeat.path + " moved again");
      s.stalled_at.reset();
    }
    s.read_once = true;
    s.ever_present = s.ever_present || reading.found || reading.newest.has_value();
    s.last_value = reading.newest;
    s.ranks = std::move(reading.ranks);
    s.steps = std::move(reading.steps);
    const auto limit = std::chrono::seconds(s.beat ? job.heartbeat.stall_s : job.heartbeat.first_beat_s);
    const auto still = now - s.last_move;
    if (still < limit) continue;
    if (!s.ever_present) {
      if (!s.never_seen_said && job.acts)
        event(StallEvent::Kind::never_seen, "heartbeat " + job.heartbeat.path + " not found on this node in " +
                                                seconds_text(still) +
                                                ": not judged (it must be on storage the node's host sees, "
                                                "not a per-job /tmp)");
      s.never_seen_said = true;
      continue;
    }
    const std::string message =
        s.beat ? "heartbeat " + job.heartbeat.path + " has not moved for " + seconds_text(still) + " (stall time " +
                     std::to_string(job.heartbeat.stall_s) + " s)"
               : "no first beat of heartbeat " + job.heartbeat.path + " within " + seconds_text(still) +
                     " (first-beat time " + std::to_string(job.heartbeat.first_beat_s) + " s)";
    if (!s.stalled_at) {
      s.stalled_at = now;
      event(StallEvent::Kind::stalled, message);
      out.back().ranks = s.ranks;
    } else if (job.acts && now - *s.stalled_at >= settle) {
      s.confirmed = true;
      event(StallEvent::Kind::confirmed, message);
    }
  }
  std::erase_if(jobs_, [&](const auto& kv) { return !listed.contains(kv.first); });
  return out;
}

}  // namespace ar::healthd
