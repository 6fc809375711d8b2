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
  // Not only writes: the registry and the timelines name every user's jobs, heartbeats and
  // checkpoint paths, which `healthctl` shows a user only for that user's own jobs.
  if ((st.st_mode & 077) != 0) {
    const mode_t fixed = st.st_mode & 0700;
    spdlog::warn("state: {} was open to group or others (mode {:o}); made it {:o}", dir.string(), st.st_mode & 07777,
                 fixed);
    if (::chmod(dir.c_str(), fixed) != 0) return std::unexpected(dir.string() + ": chmod: " + std::strerror(errno));
  }
  return {};
}

}  // namespace ar::healthd
