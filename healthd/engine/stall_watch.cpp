#include "engine/stall_watch.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>

#include "actions/bounded_call.hpp"

namespace ar::healthd {
namespace {

StallClock::time_point mtime_of(const struct stat& st) {
  return StallClock::time_point(std::chrono::duration_cast<StallClock::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

}  // namespace

HeartbeatReading read_heartbeat(const std::string& path, std::size_t max_entries) {
  HeartbeatReading r;
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) r.error = path + ": " + std::strerror(errno);
    return r;  // not there (yet): no beat
  }
  r.newest = mtime_of(st);
  if (!S_ISDIR(st.st_mode)) return r;
  // A directory beats when an entry is written (a new checkpoint, a log line): its own mtime moves
  // only when entries are added or removed, so each entry's is read too.
  std::error_code ec;
  std::filesystem::directory_iterator it(path, std::filesystem::directory_options::skip_permission_denied, ec);
  std::size_t seen = 0;
  for (; !ec && it != std::filesystem::directory_iterator() && seen < max_entries; it.increment(ec), ++seen) {
    struct stat est{};
    if (::lstat(it->path().c_str(), &est) == 0) r.newest = std::max(*r.newest, mtime_of(est));
  }
  if (ec) r.error = path + ": " + ec.message();
  return r;
}

HeartbeatReader bounded_heartbeat_reader(std::chrono::milliseconds deadline) {
  auto caller = std::make_shared<BoundedCaller>(deadline);
  return [caller](const std::string& path) {
    auto r = caller->run<HeartbeatReading>("heartbeat", [path] { return read_heartbeat(path); });
    if (r) return *r;
    return HeartbeatReading{std::nullopt, path + ": not read within " + std::to_string(caller->deadline().count()) +
                                              " ms (a hung filesystem?)"};
  };
}

std::vector<Stall> StallWatch::poll(const std::vector<WatchedJob>& jobs, StallClock::time_point now) {
  std::vector<Stall> out;
  std::set<std::uint32_t> listed;
  for (const auto& job : jobs) {
    listed.insert(job.job_id);
    auto [it, fresh] = jobs_.try_emplace(job.job_id);
    State& s = it->second;
    if (fresh || job.restart_count > s.restart_count || s.heartbeat.path != job.heartbeat.path) {
      s = State{};
      s.restart_count = job.restart_count;
      s.since = now;
      s.last_move = now;
    }
    s.heartbeat = job.heartbeat;
    if (s.stalled) continue;
    auto reading = reader_(job.heartbeat.path);
    if (!reading.error.empty()) {
      // Unreadable is not a stall: a filesystem that hangs is the storage check's finding. The time
      // goes on counting, so a heartbeat that is readable again and has not moved stalls then.
      if (reading.error != s.last_error)
        spdlog::warn("job {}: cannot read its heartbeat: {}", job.job_id, reading.error);
      s.last_error = reading.error;
      continue;
    }
    s.last_error.clear();
    if (s.read_once && reading.newest != s.last_value) {
      s.beat = true;
      s.last_move = now;
    }
    s.read_once = true;
    s.last_value = reading.newest;
    const auto limit = std::chrono::seconds(s.beat ? job.heartbeat.stall_s : job.heartbeat.first_beat_s);
    if (now - s.last_move < limit) continue;
    s.stalled = true;
    const auto still = std::chrono::duration_cast<std::chrono::seconds>(now - s.last_move).count();
    Stall stall{job.job_id, job.restart_count, job.batch_here, job.max_resumes, {}};
    stall.message = s.beat ? "heartbeat " + job.heartbeat.path + " has not moved for " + std::to_string(still) +
                                 " s (stall time " + std::to_string(job.heartbeat.stall_s) + " s)"
                           : "no first beat of heartbeat " + job.heartbeat.path + " within " + std::to_string(still) +
                                 " s (first-beat time " + std::to_string(job.heartbeat.first_beat_s) + " s)";
    out.push_back(std::move(stall));
  }
  std::erase_if(jobs_, [&](const auto& kv) { return !listed.contains(kv.first); });
  return out;
}

}  // namespace ar::healthd
