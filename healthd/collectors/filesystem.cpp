#include "filesystem.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace ar::healthd {
namespace {

// /proc/mounts writes space, tab, newline and backslash in names as \ooo.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[i + 1])) && std::isdigit(static_cast<unsigned char>(s[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

bool MountEntry::read_only() const {
  std::istringstream in(options);
  std::string o;
  while (std::getline(in, o, ','))
    if (o == "ro") return true;
  return false;
}

std::vector<MountEntry> parse_mounts(std::string_view text) {
  std::vector<MountEntry> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string device, point, type, options;
    if (!(words >> device >> point >> type >> options)) continue;
    out.push_back({unescape(device), unescape(point), type, options});
  }
  return out;
}

std::expected<std::vector<MountEntry>, std::string> read_mount_table(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::unexpected(file.string() + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parse_mounts(text.str());
}

std::optional<MountEntry> find_mount(const std::vector<MountEntry>& table, const std::filesystem::path& mount_point) {
  auto want = mount_point.lexically_normal();
  if (!want.has_filename() && want != "/") want = want.parent_path();  // "/fsx/" is "/fsx"
  std::optional<MountEntry> found;
  for (const auto& e : table)
    if (e.mount_point.lexically_normal() == want) found = e;
  return found;
}

FsSample sample_filesystem(const std::filesystem::path& dir, bool probe, const std::string& probe_name) {
  FsSample s;
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) {
    s.statvfs_error = errno_text("statvfs");
    return s;
  }
  s.total_bytes = static_cast<std::uint64_t>(v.f_blocks) * v.f_frsize;
  s.free_bytes = static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
  s.total_inodes = v.f_files;
  s.free_inodes = v.f_favail;
  if (!probe) return s;
  s.probed = true;
  auto file = dir / probe_name;
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    s.probe_error = errno_text("open");
    return s;
  }
  static constexpr char kData[] = "healthd storage probe\n";
  if (::write(fd, kData, sizeof(kData) - 1) != static_cast<ssize_t>(sizeof(kData) - 1)) s.probe_error = errno_text("write");
  else if (::fsync(fd) != 0) s.probe_error = errno_text("fsync");
  if (::close(fd) != 0 && s.probe_error.empty()) s.probe_error = errno_text("close");
  if (::unlink(file.c_str()) != 0 && s.probe_error.empty()) s.probe_error = errno_text("unlink");
  return s;
}

}  // namespace ar::healthd
