// Wires the parts of healthd together and runs them on one asio event loop: the socket server, the
// job registry and its persistence, signals (SIGTERM/SIGINT stop, SIGHUP reloads) and systemd
// readiness notification.
#pragma once

#include <expected>
#include <filesystem>
#include <ostream>
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

// `healthd --check-config`: loads the config as the daemon would (programs resolved, the profile
// found; "auto" is only named, its detection needs the instance metadata), builds the checks it asks
// for from the registry, without starting any and without touching the state directory, and prints
// what would run. Returns 0, or 2 with the error on `err`.
int check_config(const std::filesystem::path& config_file, const Overrides& overrides, std::ostream& out,
                 std::ostream& err);

// Runs until SIGTERM/SIGINT. Returns the process exit code; start-up errors are logged with cause.
int run_daemon(const std::filesystem::path& config_file, const Overrides& overrides);

}  // namespace ar::healthd
