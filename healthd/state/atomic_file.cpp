#include "atomic_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ar::healthd {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Closes a descriptor on every path out of a function.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string dump_state(const nlohmann::json& j) {
  // Outside text (a kernel-log line, a script's output) may hold bytes that are not UTF-8; a strict
  // dump would throw, and a state file that cannot be written loses what it was to keep.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  const std::string tmp = file.string() + ".tmp";
  // The temp file is made anew, never opened through whatever sits at its name: a symlink or FIFO
  // planted there (the state dir should be root's alone, but a mistake there must not become a write
  // through a link) is removed, not followed.
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return std::unexpected(tmp + ": cannot remove the old temp file: " + errno_text());
  Fd out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
  if (out.fd < 0) return std::unexpected(tmp + ": cannot create: " + errno_text());
  if (!write_all(out.fd, text)) return std::unexpected(tmp + ": write: " + errno_text());
  if (::fsync(out.fd) != 0) return std::unexpected(tmp + ": fsync: " + errno_text());
  if (::close(out.fd) != 0) {
    out.fd = -1;
    return std::unexpected(tmp + ": close: " + errno_text());
  }
  out.fd = -1;
  if (::rename(tmp.c_str(), file.c_str()) != 0) return std::unexpected(file.string() + ": rename: " + errno_text());
  // The rename is durable only once the directory is: without this a power cut can bring back the
  // old file (or none) after the action it recorded was carried out.
  auto dir = file.parent_path();
  Fd d{::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0) return std::unexpected(dir.string() + ": open for fsync: " + errno_text());
  if (::fsync(d.fd) != 0) return std::unexpected(dir.string() + ": fsync: " + errno_text());
  return {};
}

std::expected<nlohmann::json, std::string> read_json_file(const std::filesystem::path& file) {
  // Not through a symlink, and never blocking on a FIFO put in a state file's place.
  Fd in{::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (in.fd < 0) {
    if (errno == ENOENT) return nlohmann::json();
    return std::unexpected(file.string() + ": cannot open: " + errno_text());
  }
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) return std::unexpected(file.string() + ": stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) return std::unexpected(file.string() + ": not a regular file");
  if (st.st_size > kMaxStateFileBytes)
    return std::unexpected(file.string() + ": " + std::to_string(st.st_size) + " bytes, more than a state file may hold (" +
                           std::to_string(kMaxStateFileBytes) + ")");
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(file.string() + ": read: " + errno_text());
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > static_cast<std::size_t>(kMaxStateFileBytes)) return std::unexpected(file.string() + ": grew while read");
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::unexpected(file.string() + ": not valid JSON");
  return j;
}

}  // namespace ar::healthd
