// Reading a job's heartbeat (--auto-resume-heartbeat) on this host with the rights of the job's owner.
//
// The path is the user's choice and healthd runs as root, so reading it as root would answer
// questions the user cannot ask: whether a file exists in a directory only root may search, when
// root's files change, where a link the user planted points. So the read is done on the calling
// thread with that thread's filesystem identity switched to the job owner's (fsuid, fsgid, and the
// user's supplementary groups: Linux keeps these per thread), and switched back before the call
// returns. Whatever the user could not stat, the read cannot either, and it says so the same way: an
// entry of a directory the user cannot search and a missing one under it read the same. Switching
// the filesystem uid away from 0 also drops the thread's capabilities that bypass file permissions.
//
// What counts, so that no one but the owner moves or pins a job's beat:
//   - a file counts by its modification time, if the job's owner owns it;
//   - a directory counts by the newest of its entries (lstat: a link is not followed) that the job's
//     owner owns; other users' entries in a shared directory count for nothing, nor does the
//     directory's own time (anyone who may write to it moves it);
//   - a time more than kHeartbeatFutureSlack past now counts for nothing (a file dated 2035 would
//     otherwise be "the newest" for ever): a directory's such entry is skipped, a file such dated is
//     not judged.
// Nothing is opened for reading but the directory itself (O_PATH resolves the path) and, in a
// directory of per-rank files, a rank file that holds a few bytes (its step number): opened with
// O_NOFOLLOW|O_NONBLOCK, read only when it is still the owner's regular file, at most
// kMaxRankFileBytes. A FIFO or a device cannot block or be touched.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <expected>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ar::healthd {

using FileTime = std::chrono::system_clock::time_point;

// What a rank's file says besides its time (--auto-resume-heartbeat-dir): "STEP" or "STEP BUSY_S",
// the step it finished and, optionally, the seconds its own work on that step took before it waited
// for the other ranks (where every rank waits for the slowest at each step, every rank's pace is the
// job's: only the busy time tells which rank makes the others wait).
struct RankStep {
  FileTime at;  // the file's modification time: when the rank wrote the step
  std::uint64_t step = 0;
  std::optional<double> busy_s;
};
inline constexpr std::size_t kMaxRankFileBytes = 64;

// "123", "123 0.52", with surrounding blanks or a newline; anything else (a sign, an exponent past
// any sense, text, more fields) is none: a rank file that is only touched says no step.
std::optional<RankStep> parse_rank_step(std::string_view text);

// What reading a heartbeat found: the newest modification time that counts, nothing there (`newest`
// empty, no error), or why it could not be judged. `found`: the path is there, even when nothing in
// it counts yet (a directory before the first checkpoint).
struct HeartbeatReading {
  std::optional<FileTime> newest;
  std::string error;
  bool found = false;
  // A directory's entries named rank-<N> (regular files of the owner: --auto-resume-heartbeat-dir,
  // one per task), by rank: each rank's own last beat.
  std::map<std::uint32_t, FileTime> ranks{};
  // The ranks whose file holds a step number (RankStep), read as the owner.
  std::map<std::uint32_t, RankStep> steps{};
  // A directory's newest complete checkpoint (an entry that is the owner's directory holding the
  // owner's regular file COMPLETE, as --auto-resume-checkpoint-dir has them): that file's time.
  std::optional<FileTime> newest_complete{};
};

// The rank of a per-rank heartbeat file's name ("rank-12" is 12), or none.
std::optional<std::uint32_t> rank_of_heartbeat_file(std::string_view name);

// How far past this host's clock a time may be and still count (file servers' clocks drift a little).
inline constexpr std::chrono::seconds kHeartbeatFutureSlack{60};
inline constexpr std::size_t kMaxHeartbeatEntries = 10000;

// Reads `path` with the calling thread's identity as it is, counting only what `owner` owns and
// nothing later than now + kHeartbeatFutureSlack. A directory of more than `max_entries` entries is
// an error, as is refused permission; a path not there (ENOENT, ENOTDIR) is "nothing there".
HeartbeatReading read_heartbeat(const std::string& path, uid_t owner, FileTime now,
                                std::size_t max_entries = kMaxHeartbeatEntries);

// A user as the host knows them (NSS): uid, primary gid and every group the user is in.
struct UserIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

// The passwd entry of `uid` and its groups (getgrouplist). NSS may ask a directory server and
// block: call it where a deadline bounds the caller. No entry is an error, never root.
std::expected<UserIdentity, std::string> lookup_user(uid_t uid);

// Runs `fn` on the calling thread with the thread's filesystem identity (fsuid, fsgid, supplementary
// groups) set to `who`'s, then puts the thread's own back. The raw system calls act on this thread
// only (glibc's setgroups() would change every thread of the daemon). If the identity cannot be
// taken (healthd lacks CAP_SETUID/CAP_SETGID), `fn` is not run and the error says why. If it cannot
// be put back (root always can), the thread is parked for good rather than left running anything
// with a user's identity: its caller sees a call that never returns.
std::expected<void, std::string> with_fs_identity(const UserIdentity& who, const std::function<void()>& fn);

// lookup_user, then read_heartbeat as that user; "not judged" errors when the owner is unknown here
// or their identity cannot be taken. Never reads as root on the user's behalf.
HeartbeatReading read_heartbeat_as_owner(const std::string& path, uid_t owner,
                                         std::size_t max_entries = kMaxHeartbeatEntries);

}  // namespace ar::healthd
