// The heartbeat as a user hands it to healthd: the path (--auto-resume-heartbeat, checked by
// valid_heartbeat_path on both sides), the admin comment line a stall's message ends up in
// (format_attempt_comment, merge_admin_comment), and the directory the reader lists
// (collectors/heartbeat_reader: read_heartbeat), built from the input in a temp dir.
//
// Input: the first byte picks the part; the rest is the path or message, or for the tree a list of
// entries of 4 bytes each (kind, owner, time, name), at most 16 of them.
// Properties: never a crash or undefined behaviour; a path accepted has no control character and is
// valid UTF-8; the comment line is valid UTF-8 without controls, within its bound, and one line; the
// reader counts only the owner's entries and nothing dated past now plus the slack.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>

#include "auto_resume/job_comment.hpp"
#include "auto_resume/protocol.hpp"
#include "auto_resume/safe_text.hpp"
#include "collectors/heartbeat_reader.hpp"
#include "fuzz_support.hpp"

namespace {

using ar::healthd::FileTime;

void check_path(std::string_view path) {
  const bool valid = ar::proto::valid_heartbeat_path(path);
  if (valid && !ar::text::is_clean_utf8(path)) std::abort();
  if (valid && (path.empty() || path.front() != '/')) std::abort();
  const std::string clean = ar::text::sanitize(path);
  if (!ar::text::is_clean_utf8(clean)) std::abort();           // sanitize leaves nothing to escape
  if (ar::text::is_clean_utf8(path) && clean != path) std::abort();  // and changes nothing clean
  const std::string cut = ar::text::truncate_utf8(clean, path.size() / 2);
  if (cut.size() > path.size() / 2 || !ar::text::is_clean_utf8(cut)) std::abort();
}

void check_comment(std::string_view message) {
  const std::string text(message);
  const ar::AttemptEnd end{2, "STALL", "n1", "heartbeat " + text + " has not moved for 305 s"};
  const std::string line = ar::format_attempt_comment(end);
  if (line.size() > ar::kMaxCommentBytes || !ar::text::is_clean_utf8(line)) std::abort();
  (void)ar::parse_attempt_comment(line);
  const std::string merged = ar::merge_admin_comment(text, text);
  const std::string ours = ar::auto_resume_line(merged + "\n" + line);
  (void)ar::parse_attempt_comment(ours);
  (void)ar::merge_admin_comment(merged, line);
}

void check_tree(const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kMaxEntries = 12;
  const auto dir = ar::fuzz::fresh_dir("heartbeat");
  const uid_t owner = ::geteuid();
  const bool can_chown = owner == 0;
  const auto now = std::chrono::system_clock::now();
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  // What the reader must answer, worked out here from what was made.
  std::optional<FileTime> expected;
  bool made_as_said = true;
  std::size_t entries = 0;
  for (std::size_t i = 0; i + 4 <= size && i < 16 * 4; i += 4) {
    const unsigned kind = data[i] % 4;
    const bool theirs = can_chown && data[i + 1] % 2 == 1;
    // Times from 2 days ago to 2 days ahead, in steps of 20 minutes, some within the slack.
    const std::int64_t at = now_s + (static_cast<std::int64_t>(data[i + 2]) - 128) * 1200 + data[i + 3] % 90;
    const auto entry = dir / ("e" + std::to_string(i / 4));
    int rc = 0;
    if (kind == 0) ar::fuzz::write_file(entry, "x");
    if (kind == 1) rc = ::mkdir(entry.c_str(), 0700);
    if (kind == 2) rc = ::mkfifo(entry.c_str(), 0600);
    if (kind == 3) rc = ::symlink((data[i + 3] % 2) ? "/proc" : "e0", entry.c_str());
    if (theirs) rc |= ::lchown(entry.c_str(), 4242, static_cast<gid_t>(-1));
    const struct timespec times[2] = {{at, 0}, {at, 0}};
    rc |= ::utimensat(AT_FDCWD, entry.c_str(), times, AT_SYMLINK_NOFOLLOW);
    made_as_said = made_as_said && rc == 0;
    ++entries;
    const FileTime t{std::chrono::seconds(at)};
    if (!theirs && t <= now + ar::healthd::kHeartbeatFutureSlack) expected = expected ? std::max(*expected, t) : t;
  }
  const auto r = ar::healthd::read_heartbeat(dir.string(), owner, now, kMaxEntries);
  if (r.newest && *r.newest > now + ar::healthd::kHeartbeatFutureSlack) std::abort();
  if (r.newest && !r.error.empty()) std::abort();
  if (!r.found) std::abort();  // the directory is there
  if (entries > kMaxEntries) {
    if (r.error.empty()) std::abort();
  } else if (made_as_said && (!r.error.empty() || r.newest != expected)) {
    std::abort();  // only the owner's entries, nothing from the future, links not followed
  }
  for (const char* name : {"e0", "e1", "e3"}) {
    const auto one = ar::healthd::read_heartbeat((dir / name).string(), owner, now);
    if (one.newest && *one.newest > now + ar::healthd::kHeartbeatFutureSlack) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ar::fuzz::quiet_logs();
  if (size == 0) return 0;
  const auto rest = ar::fuzz::as_text(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: check_path(rest); break;
    case 1: check_comment(rest); break;
    default: check_tree(data + 1, size - 1); break;
  }
  return 0;
}
