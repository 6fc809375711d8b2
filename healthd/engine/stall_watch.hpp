// The progress watchdog of jobs that named a heartbeat (--auto-resume-heartbeat, --auto-resume-stall):
// a hung NCCL collective or a deadlocked data loader leaves every check healthy and the job running
// until its time limit; only the job's own progress says it stopped.
//
// A beat is a change of the heartbeat's modification time (a file's, or the newest of a directory's
// entries) from the value last seen; the first value seen in an attempt is not a beat (it may be the
// last attempt's). A job stalls when no beat came for `stall_s` after its first beat, or for
// `first_beat_s` before it. Each attempt of a job stalls at most once here. What a stall leads to is
// the responder's business; this only watches.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "auto_resume/protocol.hpp"

namespace ar::healthd {

using StallClock = std::chrono::system_clock;

// What reading a heartbeat found: the newest modification time, nothing there yet (`newest` empty,
// no error), or why it could not be read (a hung or refusing filesystem: neither a beat nor a stall).
struct HeartbeatReading {
  std::optional<StallClock::time_point> newest;
  std::string error;
};
using HeartbeatReader = std::function<HeartbeatReading(const std::string& path)>;

// Reads a heartbeat on this host: lstat of a file, or of a directory and its entries (at most
// `max_entries` of them; symbolic links are not followed, so a link to /proc or a FIFO costs nothing).
HeartbeatReading read_heartbeat(const std::string& path, std::size_t max_entries = 10000);

// read_heartbeat on a thread of its own, bounded by `deadline`: a heartbeat on a hung filesystem
// (NFS, a FUSE mount) costs the engine the deadline once, then is refused at once until it returns.
HeartbeatReader bounded_heartbeat_reader(std::chrono::milliseconds deadline);

// A job that stopped beating.
struct Stall {
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  bool batch_here = false;
  std::optional<std::uint32_t> max_resumes;
  std::string message;  // "heartbeat /ckpt has not moved for 305 s (stall time 300 s)"
};

// One job to watch, as the responder knows it.
struct WatchedJob {
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  bool batch_here = false;
  std::optional<std::uint32_t> max_resumes;
  proto::Heartbeat heartbeat;
};

class StallWatch {
 public:
  explicit StallWatch(HeartbeatReader reader) : reader_(std::move(reader)) {}

  // Reads each job's heartbeat once and answers the jobs that stalled now. Jobs not listed are
  // forgotten; a job seen with a newer attempt starts over.
  std::vector<Stall> poll(const std::vector<WatchedJob>& jobs, StallClock::time_point now);

  std::size_t watched() const { return jobs_.size(); }

 private:
  struct State {
    std::uint32_t restart_count = 0;
    proto::Heartbeat heartbeat;
    StallClock::time_point since;       // when this attempt was first seen here
    StallClock::time_point last_move;   // the last beat (or `since`)
    std::optional<StallClock::time_point> last_value;
    bool read_once = false;
    bool beat = false;
    bool stalled = false;
    std::string last_error;             // said once until it changes
  };
  HeartbeatReader reader_;
  std::map<std::uint32_t, State> jobs_;
};

}  // namespace ar::healthd
