// The user-facing option of the plugin: --auto-resume[=0|1].
#pragma once

#include <expected>
#include <string>

namespace ar::plugin {

inline constexpr const char* kOptionName = "auto-resume";

// `value` is the option argument as Slurm hands it to the callback: nullptr when the user wrote the
// bare flag (which means 1). Anything but "0" or "1" is refused with a message naming the value.
std::expected<bool, std::string> parse_auto_resume_value(const char* value);

}  // namespace ar::plugin
