// healthd's state files: written so that a crash leaves either the old or the new content, never a
// torn file, and read back with one rule for all of them.
#pragma once

#include <expected>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace ar::healthd {

// Writes `text` to `file` atomically: temp file beside it, fsync, rename.
std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, const std::string& text);

// Reads a JSON state file. A missing file is JSON null (nothing saved yet); a file that cannot be
// opened or is not valid JSON is an error naming the file.
std::expected<nlohmann::json, std::string> read_json_file(const std::filesystem::path& file);

}  // namespace ar::healthd
