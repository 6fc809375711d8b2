// healthd: the per-node health daemon. Runs in the foreground (systemd or a terminal).
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "runtime/process.hpp"
#include "config/config.hpp"
#include "daemon.hpp"
#include "runtime/logging.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"healthd: node health daemon for Slurm auto-resume"};
  std::string config_file = "/etc/healthd/healthd.toml";
  ar::healthd::Overrides overrides;
  std::string socket, state_dir;
  app.add_option("-c,--config", config_file, "configuration file (TOML)")->capture_default_str();
  app.add_option("--node", overrides.node_name, "Slurm node name (default: from config, else short host name)")
      ->check([](const std::string& name) {
        auto ok = ar::healthd::check_node_name(name);
        return ok ? std::string() : "node name " + ok.error();
      });
  app.add_option("--socket", socket, "socket path (overrides the config)");
  app.add_option("--state-dir", state_dir, "state directory (overrides the config)");
  std::string check_file;
  auto* check_only = app.add_option("--check-config", check_file,
                                    "check the config (FILE, else --config's) with its drop-ins, profile, programs "
                                    "and checks without starting, and print every key's value and origin; exit 0 or 2")
                         ->type_name("[FILE]")
                         ->expected(0, 1);
  app.set_version_flag("--version", std::string("healthd ") + ar::healthd::kVersion);
  CLI11_PARSE(app, argc, argv);
  overrides.socket = socket;
  overrides.state_dir = state_dir;

  ar::healthd::setup_logging(check_only->count() > 0 ? ar::healthd::LogTarget::stderr_text : ar::healthd::detect_log_target());
  if (check_only->count() > 0) {
    spdlog::set_level(spdlog::level::warn);  // the checks' own start-up lines are not the answer
    return ar::healthd::check_config(check_file.empty() ? config_file : check_file, overrides, std::cout, std::cerr);
  }
  // Before any child starts: a grandchild that escapes its process group (setsid) and outlives its
  // parent comes back to healthd, so a deadline can still kill it and the reaper waits for it.
  if (auto r = ar::healthd::become_child_subreaper(); !r)
    spdlog::warn("healthd: {}; descendants of timed-out children may escape", r.error());
  try {
    return ar::healthd::run_daemon(config_file, overrides);
  } catch (const std::exception& e) {
    spdlog::critical("healthd: {}", e.what());
    return 1;
  }
}
