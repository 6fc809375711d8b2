#include "daemon_startup.hpp"

#include <ctime>

#include <spdlog/spdlog.h>

#include "checks/ec2/ec2_config.hpp"
#include "checks/registry.hpp"
#include "collectors/imds_client.hpp"
#include "config/fields.hpp"
#include "runtime/process.hpp"
#include "state/state_dir.hpp"

namespace ar::healthd {

void set_log_level(const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); }

std::expected<std::optional<InstanceProfile>, StartupError> apply_instance_profile(Config& config, bool detect) {
  if (config.instance_type == "auto" && !detect) return std::nullopt;
  if (config.instance_type == "auto") {
    const auto& endpoint = config.section<Ec2Config>().endpoint;
    if (auto detected = fetch_instance_type(endpoint, std::chrono::seconds(2)); detected) {
      spdlog::info("profile: instance type {} (from instance metadata at {})", *detected, endpoint);
      config.instance_type = *detected;
    } else {
      spdlog::warn("profile: instance type not detected: {}; checking without a profile", detected.error());
    }
  }
  if (config.instance_type.empty()) return std::nullopt;
  auto profile = resolve_profile(config.instance_type, config.profile_dir);
  if (!profile) {
    if (config.instance_type != "auto") return std::unexpected(StartupError{2, "config: " + profile.error().message});
    spdlog::warn("healthd: profile: {}; checking without a profile", profile.error().message);
    return std::nullopt;
  }
  apply_profile(config, *profile);
  spdlog::info("profile {}: {} GPUs, {} EFA, {} Neuron, {} CPUs expected ({})", profile->name, profile->gpus,
               profile->efa_devices, profile->neuron_devices, profile->cpus, profile->source);
  return *profile;
}

// Step 1: the config file, the command line's overrides, the profile; the process set up for it.
std::expected<Config, StartupError> load_daemon_config(const std::filesystem::path& file, const Overrides& overrides) {
  auto loaded = load_config(file);
  if (!loaded) return std::unexpected(StartupError{2, "config: " + loaded.error()});
  Config config = std::move(*loaded);
  apply_overrides(config, overrides);
  set_log_level(config.log_level);
  set_child_environment(config.child_env);
  if (auto r = apply_instance_profile(config); !r) return std::unexpected(r.error());
  return config;
}

namespace {

// Moves an unreadable state file aside so the daemon can start, keeping it for a post-mortem.
void quarantine(const std::filesystem::path& file) {
  auto aside = file;
  aside += ".corrupt." + std::to_string(::time(nullptr));
  std::error_code ec;
  std::filesystem::rename(file, aside, ec);
  spdlog::error("state: moved the unreadable {} to {}{}", file.filename().string(), aside.string(), ec ? ": " + ec.message() : "");
}

}  // namespace

std::expected<std::unique_ptr<State>, StartupError> open_state(const Config& config) {
  std::error_code ec;
  // A directory healthd makes is its own from the start (0700, whatever the umask); one that was there
  // is checked, and mended with a warning, by secure_state_dir.
  if (std::filesystem::create_directories(config.state_dir, ec) && !ec)
    std::filesystem::permissions(config.state_dir, std::filesystem::perms::owner_all, ec);
  if (ec) return std::unexpected(StartupError{1, "state directory " + config.state_dir.string() + ": " + ec.message()});
  if (auto safe = secure_state_dir(config.state_dir); !safe)
    return std::unexpected(StartupError{1, "state directory " + safe.error()});
  auto state = std::make_unique<State>(config.state_dir);
  if (auto r = state->registry.load(); !r) {
    spdlog::error("healthd: state: {}", r.error());
    quarantine(config.state_dir / "jobs.json");
  }
  if (auto r = state->journal.load(); !r)
    return std::unexpected(StartupError{1, "journal: " + r.error() + " (move it aside to start without it)"});
  if (auto r = state->timeline.load(); !r) {
    spdlog::error("healthd: timeline: {}", r.error());
    quarantine(config.state_dir / "timeline.json");
  }
  if (auto r = state->events.load(); !r) {
    spdlog::error("healthd: events: {}", r.error());
    quarantine(config.state_dir / "events.json");
  }
  if (!state->journal.pending().empty())
    spdlog::warn("journal: {} action(s) left pending by the last run will be carried out", state->journal.pending().size());
  return state;
}

}  // namespace ar::healthd
