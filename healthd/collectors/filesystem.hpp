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
  std::string probe_error;  // non-empty: the probe write failed ("open: Permission denied")
};

// statvfs of `dir`, then (if `probe`) write+fsync+unlink of `dir/probe_name`. May block.
FsSample sample_filesystem(const std::filesystem::path& dir, bool probe, const std::string& probe_name);

}  // namespace ar::healthd
