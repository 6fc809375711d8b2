// Wires the parts of healthd together and runs them on one asio event loop: the socket server, the
// job registry and its persistence, signals (SIGTERM/SIGINT stop, SIGHUP reloads) and systemd
// readiness notification.
#pragma once

#include <expected>
#include <filesystem>
#include <string>

#include "config/config.hpp"

namespace ar::healthd {

struct Overrides {
  std::string node_name;
  std::filesystem::path socket;
  std::filesystem::path state_dir;
};

// Applies command-line overrides on top of a loaded config.
void apply_overrides(Config& config, const Overrides& o);

// Runs until SIGTERM/SIGINT. Returns the process exit code; start-up errors are logged with cause.
int run_daemon(const std::filesystem::path& config_file, const Overrides& overrides);

}  // namespace ar::healthd
