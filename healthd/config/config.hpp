// healthd's configuration: parsed from TOML, checked strictly (an unknown key or a wrong type is an
// error naming the file, line and key), then handed to the daemon as plain values.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <string>

namespace ar::healthd {

struct Config {
  // [daemon]
  std::string node_name;                               // Slurm node name; default: short host name
  std::filesystem::path socket = "/run/healthd/healthd.sock";
  std::filesystem::path state_dir = "/var/lib/healthd";
  std::string log_level = "info";                      // trace, debug, info, warn, error
  std::chrono::seconds ended_job_retention{3600};       // how long finished jobs stay listed
};

// Reads and checks a config file. The error reads "<file>:<line>:<column>: <what>".
std::expected<Config, std::string> load_config(const std::filesystem::path& file);

// Parses config text; `source_name` is used in error messages. Exposed for tests.
std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name);

// The short host name, as Slurm uses it by default for NodeName.
std::string default_node_name();

bool is_valid_log_level(const std::string& level);

}  // namespace ar::healthd
