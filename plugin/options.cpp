#include "options.hpp"

#include <charconv>
#include <string_view>

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

}  // namespace ar::plugin
