#include "filesystem.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <expected>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
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

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }
std::string errno_text(const char* what) { return errno_text(std::string(what), errno); }

// One open file descriptor, closed when it goes.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_;
};

constexpr std::size_t kSuffixDigits = 16;  // 64 random bits: no user can guess or pre-plant the next name
constexpr int kNameTries = 8;              // a name taken (EEXIST) is retried; 8 taken in a row is not chance

std::expected<std::string, std::string> random_suffix() {
  unsigned char bytes[kSuffixDigits / 2];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(errno_text("getrandom"));
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

bool is_probe_name(std::string_view name, const std::string& prefix) {
  if (!name.starts_with(prefix) || name.size() != prefix.size() + kSuffixDigits) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The probe directory: the mount as configured (the admin's path), then each name of `dir` below it
// opened without following a link, so no link a user plants leads the probe elsewhere. O_NONBLOCK:
// opening something else planted there (a FIFO) fails at once instead of waiting for a writer.
std::expected<Fd, std::string> open_probe_dir(const std::filesystem::path& mount, const std::filesystem::path& dir) {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC;
  Fd fd(::open(mount.c_str(), kFlags));
  if (!fd) return std::unexpected(errno_text("open"));
  for (const auto& name : dir) {
    Fd next(::openat(fd.get(), name.c_str(), kFlags | O_NOFOLLOW));
    if (!next) {
      const int err = errno;
      return std::unexpected(errno_text("open probe_dir " + dir.string(), err));
    }
    fd = std::move(next);
  }
  return fd;
}

// Unlinks this node's leftovers from a probe cut short: regular files of our user with one link and
// a probe name. A user who can write the directory may swap a name between the fstatat and the
// unlinkat; then a name of theirs goes, which they could remove themselves. Best effort: a failure
// here is no fault of the filesystem's.
void remove_stale_probes(int dir, const std::string& prefix) {
  Fd listing(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC));
  if (!listing) return;
  DIR* d = ::fdopendir(listing.get());
  if (d == nullptr) return;
  listing.release();  // closedir closes it
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    if (!is_probe_name(e->d_name, prefix)) continue;
    struct stat st {};
    if (::fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && st.st_nlink == 1) stale.emplace_back(e->d_name);
  }
  ::closedir(d);
  for (const auto& name : stale) ::unlinkat(dir, name.c_str(), 0);
}

struct ProbeFile {
  Fd fd;
  std::string name;
};

// A new file of a fresh random name, created exclusively: nothing already there is opened.
std::expected<ProbeFile, std::string> create_probe_file(int dir, const std::string& prefix) {
  for (int i = 0; i < kNameTries; ++i) {
    auto suffix = random_suffix();
    if (!suffix) return std::unexpected(suffix.error());
    std::string name = prefix + *suffix;
    Fd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
    if (fd) return ProbeFile{std::move(fd), std::move(name)};
    if (errno != EEXIST) return std::unexpected(errno_text("create"));
  }
  return std::unexpected(fmt::format("create: {} ({} random names in a row)", std::strerror(EEXIST), kNameTries));
}

std::expected<void, std::string> write_and_sync(int fd) {
  static constexpr char kData[] = "healthd storage probe\n";
  constexpr auto kSize = static_cast<ssize_t>(sizeof(kData) - 1);
  const ssize_t n = ::write(fd, kData, kSize);
  if (n < 0) return std::unexpected(errno_text("write"));
  if (n != kSize) return std::unexpected(fmt::format("write: {} of {} bytes written", n, kSize));
  if (::fsync(fd) != 0) return std::unexpected(errno_text("fsync"));
  return {};
}

// Unlinks `name` if it is still the file we made. Gone or replaced (by a user who can write the
// directory) is not a fault of the filesystem's: it was written, which is what the probe asks.
std::expected<void, std::string> unlink_if_ours(int dir, const std::string& name, const struct stat& made) {
  struct stat now {};
  if (::fstatat(dir, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return std::unexpected(errno_text("unlink"));
  }
  if (now.st_dev != made.st_dev || now.st_ino != made.st_ino) return {};
  if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT && errno != EISDIR)
    return std::unexpected(errno_text("unlink"));
  return {};
}

std::expected<void, std::string> write_probe(const std::filesystem::path& mount, const ProbeOptions& probe) {
  auto dir = open_probe_dir(mount, probe.dir);
  if (!dir) return std::unexpected(dir.error());
  if (probe.remove_stale) remove_stale_probes(dir->get(), probe.prefix);
  auto file = create_probe_file(dir->get(), probe.prefix);
  if (!file) return std::unexpected(file.error());
  struct stat made {};
  if (::fstat(file->fd.get(), &made) != 0) return std::unexpected(errno_text("fstat"));
  // O_CREAT|O_EXCL made it; a filesystem that says otherwise is not one to leave a name on.
  if (!S_ISREG(made.st_mode)) return std::unexpected(std::string("create: not a regular file after O_EXCL"));
  auto written = write_and_sync(file->fd.get());
  // Closed before the unlink: NFS would keep an unlinked open file as a .nfsXXXX name.
  if (::close(file->fd.release()) != 0 && written) written = std::unexpected(errno_text("close"));
  auto unlinked = unlink_if_ours(dir->get(), file->name, made);
  if (!written) return written;
  return unlinked;
}

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

std::string probe_prefix(const std::string& node) {
  std::string name = node;
  std::replace(name.begin(), name.end(), '/', '_');  // a name, never a path
  return ".healthd-probe." + name + ".";
}

FsSample sample_filesystem(const std::filesystem::path& mount, const ProbeOptions& probe) {
  FsSample s;
  struct statvfs v {};
  if (::statvfs(mount.c_str(), &v) != 0) {
    s.statvfs_error = errno_text("statvfs");
    return s;
  }
  s.total_bytes = static_cast<std::uint64_t>(v.f_blocks) * v.f_frsize;
  s.free_bytes = static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
  s.total_inodes = v.f_files;
  s.free_inodes = v.f_favail;
  if (!probe.enabled) return s;
  s.probed = true;
  if (auto r = write_probe(mount, probe); !r) s.probe_error = r.error();
  return s;
}

}  // namespace ar::healthd
