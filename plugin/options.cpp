#include "options.hpp"

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

}  // namespace ar::plugin
