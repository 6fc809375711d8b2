#include "atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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

std::expected<nlohmann::json, std::string> read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    if (errno == ENOENT) return nlohmann::json();
    return std::unexpected(file.string() + ": cannot open: " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) return std::unexpected(file.string() + ": not valid JSON");
  return j;
}

}  // namespace ar::healthd
