// Writing state files so that a crash leaves either the old or the new content, never a torn file.
#pragma once

#include <expected>
#include <filesystem>
#include <string>

namespace ar::healthd {

// Writes `text` to `file` atomically: temp file beside it, fsync, rename.
std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, const std::string& text);

}  // namespace ar::healthd
