#include "checkpoint.hpp"

#include <cerrno>
#include <cstring>

#include <sys/stat.h>

namespace ar::plugin {

std::expected<std::optional<std::filesystem::path>, std::string> newest_complete_checkpoint(
    const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return std::unexpected("checkpoint directory " + dir.string() + ": " + ec.message());

  std::optional<std::filesystem::path> best;
  timespec best_time{};
  std::string best_name;
  // A directory with more entries than this is not a checkpoint directory; stop rather than stall
  // the job's start on it.
  constexpr int kMaxEntries = 100000;
  int seen = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec || ++seen > kMaxEntries) break;
    const auto& entry = *it;
    std::error_code e2;
    if (!entry.is_directory(e2)) continue;
    struct stat st {};
    auto marker = entry.path() / kCompleteMarker;
    if (::stat(marker.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    auto name = entry.path().filename().string();
    bool newer = !best || st.st_mtim.tv_sec > best_time.tv_sec ||
                 (st.st_mtim.tv_sec == best_time.tv_sec && st.st_mtim.tv_nsec > best_time.tv_nsec) ||
                 (st.st_mtim.tv_sec == best_time.tv_sec && st.st_mtim.tv_nsec == best_time.tv_nsec && name > best_name);
    if (newer) {
      best = entry.path();
      best_time = st.st_mtim;
      best_name = name;
    }
  }
  if (ec) return std::unexpected("checkpoint directory " + dir.string() + ": " + ec.message());
  return best;
}

}  // namespace ar::plugin
