// Reading filesystems on the host: the mount table (/proc/mounts under the host root), statvfs, and a
// probe write. statvfs and the probe may block forever on a hung network mount: callers run
// sample_filesystem on a thread of its own and bound it (see checks/storage_check).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ar::healthd {

struct MountEntry {
  std::string device;
  std::filesystem::path mount_point;
  std::string fstype;
  std::string options;  // comma-separated, e.g. "rw,relatime"
  bool read_only() const;
};

// The lines of /proc/mounts (octal escapes such as \040 decoded); malformed lines are skipped.
std::vector<MountEntry> parse_mounts(std::string_view text);
std::expected<std::vector<MountEntry>, std::string> read_mount_table(const std::filesystem::path& file);
// The entry mounted last on `mount_point` (stacked mounts: the top one counts), if any.
std::optional<MountEntry> find_mount(const std::vector<MountEntry>& table, const std::filesystem::path& mount_point);

struct FsSample {
  std::string statvfs_error;  // non-empty: statvfs failed, the numbers below mean nothing
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;  // available to unprivileged users
  std::uint64_t total_inodes = 0;
  std::uint64_t free_inodes = 0;
  bool probed = false;
  std::string probe_error;  // non-empty: the probe write failed ("create: No space left on device")
};

// The probe write. Users may write in the directory it is made in (the mount root of a shared
// filesystem often is), so nothing a user plants there can fail or block it: each probe file has a
// fresh random name (`prefix` + 16 hex digits from getrandom), is created exclusively, without
// following links and without blocking (O_CREAT|O_EXCL|O_NOFOLLOW|O_NONBLOCK, mode 0600), checked
// to be the regular file just made, written, fsync'd and unlinked; a name already taken is retried
// with another. The directory is reached from the mount without following links.
struct ProbeOptions {
  bool enabled = true;
  std::filesystem::path dir;  // relative to the mount, plain names only (config checks it); empty: the mount root
  std::string prefix;         // ".healthd-probe.<node>.": one node's files on a shared filesystem
  // Also unlink leftovers of an earlier probe cut short (a crash): names of `prefix` + 16 hex digits
  // that are regular files of this user (root) with one link. Nothing else is touched; links are
  // never followed. Costs a readdir, so asked for once per mount, not every sweep.
  bool remove_stale = false;
};

// The file name prefix of one node's probe files.
std::string probe_prefix(const std::string& node);

// statvfs of `mount`, then the probe in `mount/probe.dir` if enabled. May block (a hung mount).
FsSample sample_filesystem(const std::filesystem::path& mount, const ProbeOptions& probe);

}  // namespace ar::healthd
