#include "collectors/heartbeat_reader.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <climits>
#include <cstring>
#include <memory>

#include <spdlog/spdlog.h>

namespace ar::healthd {
namespace {

FileTime mtime_of(const struct stat& st) {
  return FileTime(std::chrono::duration_cast<FileTime::duration>(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                                  std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

std::string with_errno(const std::string& path, int err) { return path + ": " + std::strerror(err); }

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The calling thread's own credentials, by raw system call: glibc's wrappers of setgroups (and of
// setuid and friends) change every thread of the process; the kernel's calls change this one.
#if defined(SYS_setfsuid32)
constexpr long kSetFsUid = SYS_setfsuid32, kSetFsGid = SYS_setfsgid32, kSetGroups = SYS_setgroups32,
               kGetGroups = SYS_getgroups32;
#else
constexpr long kSetFsUid = SYS_setfsuid, kSetFsGid = SYS_setfsgid, kSetGroups = SYS_setgroups,
               kGetGroups = SYS_getgroups;
#endif

// setfsuid and setfsgid answer the previous value and cannot fail loudly; an id of -1 changes
// nothing, so it asks what the value is now.
uid_t set_fsuid(uid_t uid) { return static_cast<uid_t>(::syscall(kSetFsUid, uid)); }
gid_t set_fsgid(gid_t gid) { return static_cast<gid_t>(::syscall(kSetFsGid, gid)); }
uid_t current_fsuid() { return set_fsuid(static_cast<uid_t>(-1)); }
gid_t current_fsgid() { return set_fsgid(static_cast<gid_t>(-1)); }

std::vector<gid_t> current_groups() {
  const long n = ::syscall(kGetGroups, 0, nullptr);
  std::vector<gid_t> groups(n > 0 ? static_cast<std::size_t>(n) : 0);
  if (n > 0 && ::syscall(kGetGroups, n, groups.data()) != n) groups.clear();
  return groups;
}

int set_groups(const std::vector<gid_t>& groups) {
  return ::syscall(kSetGroups, groups.size(), groups.empty() ? nullptr : groups.data()) == 0 ? 0 : errno;
}

struct ThreadIdentity {
  uid_t fsuid;
  gid_t fsgid;
  std::vector<gid_t> groups;
  bool operator==(const ThreadIdentity&) const = default;
};

ThreadIdentity current_identity() { return {current_fsuid(), current_fsgid(), current_groups()}; }

// Sets all three, groups first: switching the fsuid away from 0 drops the capabilities that bypass
// file permissions, never CAP_SETGID, but the order keeps that question out. The empty string when
// the thread is now `to`.
std::string set_identity(const ThreadIdentity& to) {
  if (int err = set_groups(to.groups)) return std::string("setgroups: ") + std::strerror(err);
  set_fsgid(to.fsgid);
  if (current_fsgid() != to.fsgid) return "setfsgid(" + std::to_string(to.fsgid) + ") refused";
  set_fsuid(to.fsuid);
  if (current_fsuid() != to.fsuid) return "setfsuid(" + std::to_string(to.fsuid) + ") refused";
  return {};
}

// Back to the thread's own identity, uid first (it brings the capabilities back), then checked.
bool restore_identity(const ThreadIdentity& own) {
  set_fsuid(own.fsuid);
  set_fsgid(own.fsgid);
  set_groups(own.groups);
  return current_identity() == own;
}

[[noreturn]] void park_for_good(uid_t uid) {
  spdlog::critical("heartbeat: this reader thread could not take its own identity back after reading as uid {}; "
                   "it stops here for good (restart healthd to have it back)",
                   uid);
  for (;;) ::pause();
}

}  // namespace

namespace {

// A heartbeat file: its time, if the job's owner wrote it and it is not in the future.
void read_heartbeat_file(const std::string& path, const struct stat& st, uid_t owner, FileTime now, HeartbeatReading& r) {
  if (st.st_uid != owner) {
    r.error = path + ": owned by uid " + std::to_string(st.st_uid) + ", not by the job's user (uid " +
              std::to_string(owner) + "): only the job owner's files count";
  } else if (mtime_of(st) > now + kHeartbeatFutureSlack) {
    r.error = path + ": modified " +
              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(mtime_of(st) - now).count()) +
              " s in the future by this host's clock: not counted";
  } else {
    r.newest = mtime_of(st);
  }
}

// The step a rank's file holds, if it is still the file that was listed (the same inode, the owner's
// regular file: a rename or a link swapped in between is not followed) and holds a step.
std::optional<RankStep> read_rank_step(int dir_fd, const char* name, const struct stat& listed) {
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  FdCloser close_fd{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != listed.st_ino || st.st_dev != listed.st_dev ||
      st.st_uid != listed.st_uid)
    return std::nullopt;
  std::array<char, kMaxRankFileBytes> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  if (n <= 0) return std::nullopt;
  auto step = parse_rank_step(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  if (step) step->at = mtime_of(st);
  return step;
}

// The time of `name`'s COMPLETE marker, if `name` is still a directory (no link followed) and the
// marker is the owner's regular file, not in the future.
std::optional<FileTime> complete_marker_time(int dir_fd, const char* name, uid_t owner, FileTime latest) {
  const int fd = ::openat(dir_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  FdCloser close_fd{fd};
  struct stat st{};
  if (::fstatat(fd, "COMPLETE", &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner ||
      mtime_of(st) > latest)
    return std::nullopt;
  return mtime_of(st);
}

// A heartbeat directory beats when its owner writes an entry (a new checkpoint, a log line). Its own
// time moves when anyone adds or removes an entry, so it does not count; a directory the user may not
// list is an error, never one that does not move. Entries of others, and ones in the future, are
// passed over.
void read_heartbeat_dir(const std::string& path, int fd, uid_t owner, FileTime now, std::size_t max_entries,
                        HeartbeatReading& r) {
  const FileTime latest = now + kHeartbeatFutureSlack;
  const int dfd = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    r.error = with_errno(path, errno);
    return;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dfd), ::closedir);
  if (!dir) {
    r.error = with_errno(path, errno);
    ::close(dfd);
    return;
  }
  std::size_t seen = 0;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(dir.get());
    if (entry == nullptr) {
      if (errno != 0) r.error = with_errno(path, errno);
      break;
    }
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (++seen > max_entries) {
      r.error = path + ": more than " + std::to_string(max_entries) + " entries; point the heartbeat at one file";
      break;
    }
    struct stat est{};
    if (::fstatat(::dirfd(dir.get()), entry->d_name, &est, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed since it was listed
      r.error = with_errno(path + "/" + std::string(name), errno);
      break;
    }
    if (est.st_uid != owner || mtime_of(est) > latest) continue;
    r.newest = r.newest ? std::max(*r.newest, mtime_of(est)) : mtime_of(est);
    if (S_ISREG(est.st_mode)) {
      const auto rank = rank_of_heartbeat_file(name);
      if (!rank) continue;
      r.ranks[*rank] = mtime_of(est);
      // A file only touched (size 0) says no step and costs no open.
      if (est.st_size > 0 && static_cast<std::size_t>(est.st_size) <= kMaxRankFileBytes)
        if (auto step = read_rank_step(::dirfd(dir.get()), entry->d_name, est)) r.steps[*rank] = *step;
    } else if (S_ISDIR(est.st_mode)) {
      if (auto done = complete_marker_time(::dirfd(dir.get()), entry->d_name, owner, latest))
        r.newest_complete = r.newest_complete ? std::max(*r.newest_complete, *done) : *done;
    }
  }
  if (!r.error.empty()) {
    r.newest.reset();
    r.ranks.clear();
    r.steps.clear();
    r.newest_complete.reset();
  }
}

}  // namespace

std::optional<std::uint32_t> rank_of_heartbeat_file(std::string_view name) {
  constexpr std::string_view prefix = "rank-";
  if (!name.starts_with(prefix)) return std::nullopt;
  const auto digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  std::uint32_t rank = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    rank = rank * 10 + static_cast<std::uint32_t>(c - '0');
  }
  return rank;
}

std::optional<RankStep> parse_rank_step(std::string_view text) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && blank(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !blank(text[i])) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  if (fields.empty() || fields.size() > 2) return std::nullopt;
  RankStep r;
  const auto& step = fields[0];
  if (step.size() > 19 || !std::all_of(step.begin(), step.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  if (std::from_chars(step.data(), step.data() + step.size(), r.step).ec != std::errc()) return std::nullopt;
  if (fields.size() == 2) {
    const auto& busy = fields[1];
    double v = 0;
    const auto [end, ec] = std::from_chars(busy.data(), busy.data() + busy.size(), v, std::chars_format::fixed);
    // A step's own time: a day at most, and never negative or NaN.
    if (ec != std::errc() || end != busy.data() + busy.size() || !std::isfinite(v) || v < 0 || v > 86400)
      return std::nullopt;
    r.busy_s = v;
  }
  return r;
}

HeartbeatReading read_heartbeat(const std::string& path, uid_t owner, FileTime now, std::size_t max_entries) {
  HeartbeatReading r;
  // O_PATH resolves the path (following links, with this thread's rights) without opening what is
  // there: a FIFO cannot block, a device is never touched.
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) r.error = with_errno(path, errno);
    return r;  // not there (yet)
  }
  FdCloser close_fd{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    r.error = with_errno(path, errno);
    return r;
  }
  r.found = true;
  if (S_ISDIR(st.st_mode)) read_heartbeat_dir(path, fd, owner, now, max_entries, r);
  else read_heartbeat_file(path, st, owner, now, r);
  return r;
}

std::expected<UserIdentity, std::string> lookup_user(uid_t uid) {
  const long hint = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<std::size_t>(hint) : 4096);
  struct passwd pw{};
  struct passwd* found = nullptr;
  int err = 0;
  while ((err = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)) == ERANGE && buf.size() < (1u << 20))
    buf.resize(buf.size() * 2);
  if (err != 0) return std::unexpected("uid " + std::to_string(uid) + ": passwd lookup failed: " + std::strerror(err));
  if (found == nullptr) return std::unexpected("uid " + std::to_string(uid) + " has no passwd entry on this host");
  UserIdentity who{uid, pw.pw_gid, {}};
  // getgrouplist answers how many groups there are when the list is too short; a user in more
  // groups than the kernel allows a thread to hold is refused by setgroups, and said so then.
  int count = 32;
  for (int tries = 0; tries < 8; ++tries) {
    who.groups.resize(static_cast<std::size_t>(count));
    int n = count;
    if (::getgrouplist(pw.pw_name, pw.pw_gid, who.groups.data(), &n) >= 0) {
      who.groups.resize(static_cast<std::size_t>(n));
      return who;
    }
    if (n <= count) n = count * 2;  // no better answer: grow anyway
    count = std::min(n, 1 << 16);
  }
  return std::unexpected("uid " + std::to_string(uid) + ": the group list of " + pw.pw_name + " could not be read");
}

std::expected<void, std::string> with_fs_identity(const UserIdentity& who, const std::function<void()>& fn) {
  const ThreadIdentity own = current_identity();
  const std::string refused = set_identity({who.uid, who.gid, who.groups});
  if (refused.empty()) {
    try {
      fn();
    } catch (...) {  // back to its own identity before anything else runs on this thread
      if (!restore_identity(own)) park_for_good(who.uid);
      throw;
    }
  }
  if (!restore_identity(own)) park_for_good(who.uid);
  if (!refused.empty())
    return std::unexpected("cannot take the identity of uid " + std::to_string(who.uid) + " (" + refused + ")");
  return {};
}

HeartbeatReading read_heartbeat_as_owner(const std::string& path, uid_t owner, std::size_t max_entries) {
  auto not_read = [&](const std::string& why) {
    return HeartbeatReading{std::nullopt, path + ": not read: " + why + "; it is read with the job owner's rights only"};
  };
  auto who = lookup_user(owner);
  if (!who) return not_read(who.error());
  HeartbeatReading r;
  auto done = with_fs_identity(*who, [&] {
    r = read_heartbeat(path, owner, std::chrono::system_clock::now(), max_entries);
  });
  if (!done) return not_read(done.error());
  return r;
}

}  // namespace ar::healthd
