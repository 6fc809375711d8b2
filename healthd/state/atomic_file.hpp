// healthd's state files: written so that a crash leaves either the old or the new content, never a
// torn file, and read back with one rule for all of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace ar::healthd {

// Writes `text` to `file` atomically: temp file beside it, fsync, rename.
std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, const std::string& text);

// Wall-clock times in state files and replies: milliseconds since the epoch, one rule for all.
inline std::int64_t to_epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
inline std::chrono::system_clock::time_point from_epoch_ms(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

// Reads a JSON state file. A missing file is JSON null (nothing saved yet); a file that cannot be
// opened or is not valid JSON is an error naming the file.
std::expected<nlohmann::json, std::string> read_json_file(const std::filesystem::path& file);

}  // namespace ar::healthd
