// The daemon's start, before anything runs: the config loaded (with the command line's overrides and
// the instance profile), and the state directory opened with what healthd kept across restarts.
// daemon.cpp builds the running daemon from these.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "config/profiles.hpp"
#include "daemon.hpp"
#include "state/event_log.hpp"
#include "state/job_registry.hpp"
#include "state/journal.hpp"
#include "state/timeline.hpp"

namespace ar::healthd {

// Why the daemon could not start: logged, and the process exit code (2: the config, 1: the host).
struct StartupError {
  int exit_code;
  std::string message;
};

void set_log_level(const std::string& level);

// The instance profile fills the expected counts the config leaves unset. "auto" is detected from
// EC2 instance metadata (the EC2 check's endpoint); off EC2, or with IMDS down, the daemon checks
// without a profile rather than not start. A named profile that does not exist is a config error.
// `detect`: false leaves "auto" undetected (--check-config asks no metadata service). Returns the
// profile applied, if any.
std::expected<std::optional<InstanceProfile>, StartupError> apply_instance_profile(Config& config, bool detect = true);

// Step 1: the config file and its drop-ins, the overrides, the log level, the profile.
std::expected<Config, StartupError> load_daemon_config(const std::filesystem::path& file, const Overrides& overrides);

// What healthd keeps across restarts (state_dir): the job registry, the action journal, the timeline.
struct State {
  explicit State(const std::filesystem::path& dir)
      : registry(dir / "jobs.json"), journal(dir / "journal.json"), timeline(dir / "timeline.json"), events(dir / "events.json") {}
  JobRegistry registry;
  Journal journal;
  Timeline timeline;
  EventLog events;  // healthctl events
};

// Step 2: the state directory, made safe, and what is in it. An unreadable registry or timeline is
// moved aside; an unreadable journal stops the start, since losing it could lose an action.
std::expected<std::unique_ptr<State>, StartupError> open_state(const Config& config);

}  // namespace ar::healthd
