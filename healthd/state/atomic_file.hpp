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

// Writes `text` to `file` atomically: a fresh temp file beside it (never opened through a link),
// fsync, rename, fsync of the directory. An error names the file and the failing step.
std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, const std::string& text);

// Wall-clock times in state files and replies: milliseconds since the epoch, one rule for all.
inline std::int64_t to_epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
inline std::chrono::system_clock::time_point from_epoch_ms(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

// Serialises state for write_file_atomically; never throws on text that is not UTF-8 (it is replaced).
std::string dump_state(const nlohmann::json& j);

// The largest state file read back; a bigger one is refused rather than read into memory.
inline constexpr long kMaxStateFileBytes = 256L << 20;

// Reads a JSON state file (a regular file, not through a link). A missing file is JSON null (nothing saved yet); a file that cannot be
// opened or is not valid JSON is an error naming the file.
std::expected<nlohmann::json, std::string> read_json_file(const std::filesystem::path& file);

}  // namespace ar::healthd
