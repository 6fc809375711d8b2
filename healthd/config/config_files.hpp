// The config's files read as one TOML table: the file, then its drop-ins (FILE.d/*.toml, in name
// order) merged over it. Each file is checked before it is read (a regular file, root's or healthd's
// own, writable by nobody else, at most 1 MiB, opened without blocking): a config names programs
// healthd runs as root. config.cpp reads the table into a Config.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "config/fields.hpp"

namespace ar::healthd {

// One TOML text; the error names the source and the position.
Parsed<toml::table> parse_toml(std::string_view text, const std::string& source_name);

// The file and its drop-ins, merged; `files` gets every file read, in order.
Parsed<toml::table> read_config_files(const std::filesystem::path& file, std::vector<std::filesystem::path>& files);

}  // namespace ar::healthd
