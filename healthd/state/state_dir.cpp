#include "state_dir.hpp"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ar::healthd {

std::expected<void, std::string> secure_state_dir(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::unexpected(dir.string() + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return std::unexpected(dir.string() + ": not a directory");
  if (st.st_uid != ::geteuid())
    return std::unexpected(dir.string() + ": owned by uid " + std::to_string(st.st_uid) + ", not by healthd's (" +
                           std::to_string(::geteuid()) + ")");
  if ((st.st_mode & 022) != 0) {
    const mode_t fixed = st.st_mode & 07755 & ~static_cast<mode_t>(07022);
    spdlog::warn("state: {} was writable by group or others; made it {:o}", dir.string(), fixed & 0777);
    if (::chmod(dir.c_str(), fixed) != 0) return std::unexpected(dir.string() + ": chmod: " + std::strerror(errno));
  }
  return {};
}

}  // namespace ar::healthd
