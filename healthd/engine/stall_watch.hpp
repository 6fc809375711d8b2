// The progress watchdog of jobs that named a heartbeat (--auto-resume-heartbeat, --auto-resume-stall):
// a hung NCCL collective or a deadlocked data loader leaves every check healthy and the job running
// until its time limit; only the job's own progress says it stopped.
//
// Watched on the node of the job's batch script (the one node that acts on a stall, and the one
// whose host must see the heartbeat), and, for per-rank heartbeats (--auto-resume-heartbeat-dir), on
// every node running some of the job's ranks: there a stall is only noted (with each rank's last
// beat), for the node to judge its own part (engine/rank_evidence.hpp); it is confirmed nowhere else. A beat is a change of the heartbeat's modification time (a
// file's, or the newest of a directory's entries) from the value last seen; the first value seen in
// an attempt is not a beat (it may be the last attempt's). A job is stalled when no beat came for
// `stall_s` after its first beat, or for `first_beat_s` before it; the stall is confirmed when it
// still stands a settle time later (time for the other nodes of the job to find a fault first, and a
// beat late by a little to cancel it). Each attempt is confirmed at most once.
//
// What cannot be judged is never a stall: a heartbeat this host never saw (a file on another node's
// disk, a per-job /tmp), one that cannot be read (permissions, a hung filesystem, too many entries),
// one whose owner is unknown. It is read with the job owner's rights, and only the owner's files
// count (collectors/heartbeat_reader.hpp).
// Time is the steady clock's: a wall clock step must not stall every job at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "auto_resume/protocol.hpp"
#include "collectors/heartbeat_reader.hpp"

namespace ar::healthd {

using StallClock = std::chrono::steady_clock;

// Reads the heartbeat `path` of a job whose owner is `uid` (collectors/heartbeat_reader.hpp).
using HeartbeatReader = std::function<HeartbeatReading(const std::string& path, std::uint32_t uid)>;

// read_heartbeat_as_owner on a thread per heartbeat path, each bounded by `deadline` (the owner's
// NSS lookup included): a heartbeat on a hung filesystem costs the engine the deadline once, then
// that path is refused at once until its read returns, and other jobs' heartbeats are still read.
// The threads are reused: each read takes the owner's identity and gives it back before it returns.
HeartbeatReader bounded_heartbeat_reader(std::chrono::milliseconds deadline);

struct StallEvent {
  enum class Kind {
    stalled,       // no beat for the stall time: noted; confirmed after the settle time
    moving_again,  // a beat came before the stall was confirmed
    confirmed,     // still stalled after the settle time: the responder acts
    never_seen,    // the heartbeat was never there on this host: nothing is done, once said
  };
  Kind kind = Kind::stalled;
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  std::optional<std::uint32_t> max_resumes;
  std::string message;  // "heartbeat /ckpt has not moved for 305 s (stall time 300 s)"
  // stalled: each rank's last beat (per-rank heartbeats), as read when the stall was noted.
  std::map<std::uint32_t, FileTime> ranks{};
};

// One job to watch, as the responder knows it.
struct WatchedJob {
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  std::optional<std::uint32_t> max_resumes;
  proto::Heartbeat heartbeat;
  // The job's owner, whose rights the heartbeat is read with; unknown: not judged.
  std::optional<std::uint32_t> uid = std::nullopt;
  // This node acts on the job's stall (its batch script runs here); otherwise a stall is noted only.
  bool acts = true;
};

class StallWatch {
 public:
  explicit StallWatch(HeartbeatReader reader) : reader_(std::move(reader)) {}

  // Reads each job's heartbeat once and answers what changed. Jobs not listed are forgotten; a job
  // seen with a newer attempt starts over.
  std::vector<StallEvent> poll(const std::vector<WatchedJob>& jobs, StallClock::time_point now,
                               std::chrono::seconds settle);

  std::size_t watched() const { return jobs_.size(); }
  // The rank files' steps of the job's last reading (per-rank heartbeats whose files hold steps);
  // empty when none, or when the job is not watched.
  const std::map<std::uint32_t, RankStep>& steps_of(std::uint32_t job_id) const;

 private:
  struct State {
    std::uint32_t restart_count = 0;
    std::string path;
    StallClock::time_point last_move;  // the last beat, or when this attempt was first seen here
    std::optional<FileTime> last_value;
    bool read_once = false;
    bool ever_present = false;
    bool beat = false;
    std::optional<StallClock::time_point> stalled_at;
    bool confirmed = false;
    bool never_seen_said = false;
    std::string last_error;  // said once until it changes
    std::map<std::uint32_t, FileTime> ranks{};  // the last reading's per-rank beats
    std::map<std::uint32_t, RankStep> steps{};  // and the steps their files hold
  };
  HeartbeatReader reader_;
  std::map<std::uint32_t, State> jobs_;
};

}  // namespace ar::healthd
