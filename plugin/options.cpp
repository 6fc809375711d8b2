#include "options.hpp"

#include <charconv>
#include <optional>
#include <algorithm>
#include <string_view>

#include "auto_resume/protocol.hpp"

namespace ar::plugin {

std::expected<bool, std::string> parse_auto_resume_value(const char* value, ValueSource source) {
  if (value == nullptr) return true;
  std::string_view v(value);
  if (source == ValueSource::forwarded_by_slurm && (v.empty() || v == "(null)")) return true;
  if (v == "1") return true;
  if (v == "0") return false;
  return std::unexpected("invalid value '" + std::string(v) + "' for --" + kOptionName + ": expected 0 or 1");
}

std::expected<std::string, std::string> parse_checkpoint_dir(const char* value) {
  std::string_view v(value ? value : "");
  if (v.empty() || v.front() != '/')
    return std::unexpected("invalid value '" + std::string(v) + "' for --" + kCheckpointOptionName +
                           ": expected an absolute directory path");
  return std::string(v);
}

std::expected<std::uint32_t, std::string> parse_max_resumes(const char* value) {
  std::string_view v(value ? value : "");
  std::uint32_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n > 1000)
    return std::unexpected("invalid value '" + std::string(v) + "' for --" + kMaxResumesOptionName +
                           ": expected a number of resumes from 0 to 1000");
  return n;
}

std::expected<std::string, std::string> parse_heartbeat_path(const char* value) {
  std::string_view v(value ? value : "");
  if (!proto::valid_heartbeat_path(v))
    return std::unexpected("invalid value for --" + std::string(kHeartbeatOptionName) +
                           ": expected an absolute path (a file or a directory) of at most " +
                           std::to_string(proto::kMaxHeartbeatPathBytes) + " bytes, valid UTF-8 without control characters");
  return std::string(v);
}

namespace {
std::optional<std::uint32_t> seconds(std::string_view v) {
  std::uint32_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n == 0 || n > proto::kMaxStallSeconds)
    return std::nullopt;
  return n;
}
}  // namespace

std::expected<StallTimes, std::string> parse_stall(const char* value) {
  std::string_view v(value ? value : "");
  const auto comma = v.find(',');
  auto stall = seconds(v.substr(0, comma));
  auto first = comma == std::string_view::npos ? stall : seconds(v.substr(comma + 1));
  if (!stall || !first)
    return std::unexpected("invalid value '" + std::string(v.substr(0, 200)) + "' for --" + kStallOptionName +
                           ": expected SECONDS or SECONDS,FIRST_SECONDS, each from 1 to " +
                           std::to_string(proto::kMaxStallSeconds));
  StallTimes t;
  t.stall_s = *stall;
  t.first_beat_s = comma == std::string_view::npos ? std::max<std::uint32_t>(*stall, 1800) : *first;
  return t;
}

}  // namespace ar::plugin
