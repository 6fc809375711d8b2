#include "atomic_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace ar::healthd {

std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  const std::string tmp = file.string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return std::unexpected(tmp + ": cannot create: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string e = tmp + ": write: " + std::strerror(errno);
      ::close(fd);
      return std::unexpected(e);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    std::string e = tmp + ": fsync: " + std::strerror(errno);
    ::close(fd);
    return std::unexpected(e);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), file.c_str()) != 0) return std::unexpected(file.string() + ": rename: " + std::strerror(errno));
  return {};
}

}  // namespace ar::healthd
