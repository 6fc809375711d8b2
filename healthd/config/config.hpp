// healthd's configuration: parsed from TOML, checked strictly (an unknown key or a wrong type is an
// error naming the file, line and key), then handed to the daemon as plain values. This is the core's
// part ([daemon], [policy], [slurm], [server]); each [checks.NAME] section is read by its check
// (config/check_settings.hpp) and held here opaquely.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <memory>
#include <span>

#include "vocabulary/action.hpp"
#include "config/check_settings.hpp"
#include "config/cure_config.hpp"
#include "config/telemetry_config.hpp"
#include "config/server_limits.hpp"

namespace ar::healthd {

// What a job healthd requeues gets in the queue: "top" starts it before other pending jobs that fit
// (a fixed top priority while it waits, Slurm's own again once it runs); "keep": Slurm's priority.
enum class RequeuePriority { top, keep };
// What a job's stalled heartbeat leads to once every node of it checked healthy ([policy] stall_action).
enum class StallAction { requeue, cancel, warn };
enum class StragglerAction { report, exclude };

// [[policy.hook]]: an admin's program run once healthd has carried out one of the actions in `on`
// (drain, reboot, requeue, resume, signal): a new action as config rather than code (a ticket, a
// page, a cluster manager's replace call). argv, no shell; %n in a word is the node name. It gets
// HEALTHD_ACTION, HEALTHD_NODE, HEALTHD_CODE, HEALTHD_REASON and HEALTHD_JOB_ID (0: none) in its
// environment. A non-zero exit is retried with backoff, at most `attempts` times.
struct HookConfig {
  std::string name;
  std::vector<Action> on;
  std::vector<std::string> command;
  std::chrono::seconds timeout{30};
  std::uint32_t attempts = 3;
  std::string command_where;  // "file:line:col" of `command`, for errors at load
};

struct PolicyConfig {
  std::uint32_t max_resumes = 3;         // per job; past it the job ends as it would without us
  bool resume_on_any_failure = false;    // also requeue when no node is faulty (application failures)
  std::uint32_t recovery_passes = 3;     // healthy sweeps in a row before healthd resumes its own drain
  std::uint32_t flap_max_faults = 3;     // this many faults within flap_window keep the node out
  std::chrono::seconds flap_window{3600};
  double max_drained_share = 0.5;        // of each partition the node is in, drained automatically
  std::chrono::seconds check_interval{30};
  std::chrono::seconds check_deadline{10};
  RequeuePriority requeue_priority = RequeuePriority::top;
  StallAction stall_action = StallAction::requeue;
  // A stalled job with per-rank heartbeats is requeued without the nodes its evidence points to
  // (policy/suspect_policy.hpp), at most this share of its nodes (at least one); more than that
  // pointing at themselves means the whole job stopped together, and no node is kept off it.
  double suspect_max_share = 0.25;
  // The lemon node: named the suspect of this many stalls within lemon_window, by the jobs of as many
  // different users (one user's own heartbeats must never get a node drained), the node is drained
  // for the deep check ([cure] deep_check) even though its checks pass; without a deep check it
  // stays drained for an admin. 0: never.
  std::uint32_t lemon_suspicions = 3;
  std::chrono::seconds lemon_window{7 * 24 * 3600};
  // false: the jobs of one user count too (a cluster of one team's account).
  bool lemon_distinct_users = true;
  // Stragglers (per-rank heartbeats whose files hold the step, engine/straggler_watch.hpp): a node
  // whose slowest rank's step time over straggler_window stays above the job's median by more than
  // straggler_share is reported; `exclude` also requeues the job without it at the job's next
  // complete checkpoint (--auto-resume-checkpoint-dir), within suspect_max_share and only where the
  // job still fits.
  double straggler_share = 0.15;
  std::chrono::seconds straggler_window{300};
  StragglerAction straggler_action = StragglerAction::report;
  // A fault under an auto-resume srun step of a batch job re-runs that step on the job's other nodes
  // (the faulty one leaves the allocation) when enough are left, instead of requeueing the job.
  bool step_rerun = true;
  std::vector<HookConfig> hooks;         // [[policy.hook]]
  // Decide and log (and record in job timelines) what would be done, but journal and do nothing: no
  // drain, requeue, resume, signal or hook (NHC's MARK_OFFLINE=0). What was journalled before it
  // was set is still finished, so no job is left half-requeued.
  bool report_only = false;
  CureConfig cure;                       // [cure]: read as its own section, handed over at reload with the policy
};

struct SlurmConfig {
  std::string scontrol = "scontrol";     // for `scontrol reboot` only (libslurm 22.05 has no reboot call); a
                                         // bare name is resolved at load in /usr/sbin:/usr/bin:/sbin:/bin
  std::chrono::seconds timeout{10};      // one Slurm call; past it Slurm counts as not answering
  std::string user = "slurm";            // SlurmUser: sees every job over the socket, as root does
};

// The checks' settings, one per registered [checks.NAME] section (checks/registry.cpp), copied by
// value like the rest of the config.
class CheckSettingsMap {
 public:
  CheckSettingsMap() = default;
  CheckSettingsMap(const CheckSettingsMap& other) {
    for (const auto& [name, s] : other.map_) map_.emplace(name, s->clone());
  }
  CheckSettingsMap& operator=(const CheckSettingsMap& other) {
    if (this != &other) {
      CheckSettingsMap copy(other);
      map_.swap(copy.map_);
    }
    return *this;
  }
  CheckSettingsMap(CheckSettingsMap&&) noexcept = default;
  CheckSettingsMap& operator=(CheckSettingsMap&&) noexcept = default;
  ~CheckSettingsMap() = default;

  void set(const std::string& name, std::unique_ptr<CheckSettings> s) { map_[name] = std::move(s); }
  const CheckSettings* find(const std::string& name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : it->second.get();
  }
  CheckSettings* find(const std::string& name) {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : it->second.get();
  }
  auto begin() { return map_.begin(); }
  auto end() { return map_.end(); }
  auto begin() const { return map_.begin(); }
  auto end() const { return map_.end(); }

 private:
  std::map<std::string, std::unique_ptr<CheckSettings>> map_;
};

struct Config {
  // [daemon]
  std::string node_name;                               // Slurm node name; default: short host name
  std::filesystem::path socket = "/run/healthd/healthd.sock";
  std::filesystem::path state_dir = "/var/lib/healthd";
  std::filesystem::path host_root = "/";               // every host path is read under it
  std::string log_level = "info";                      // trace, debug, info, warn, error
  std::chrono::seconds ended_job_retention{3600};       // how long finished jobs stay listed
  std::string instance_type;                           // profile name (config/profiles.hpp); empty: none
  std::filesystem::path profile_dir = "/etc/healthd/profiles.d";  // the admin's own profiles (*.toml)
  // Variables of healthd's environment its children (scontrol, scripts, dcgmi) get besides
  // SLURM_CONF and TZ; everything else is left out (runtime/process.hpp).
  std::vector<std::string> child_env;

  PolicyConfig policy;        // [policy]
  SlurmConfig slurm;          // [slurm]
  ServerLimits server;        // [server]
  MetricsConfig metrics;      // [metrics]
  NotifyConfig notify;        // [notify]
  CheckSettingsMap checks;    // [checks.NAME], by NAME: each check's own settings

  // The files read, in order: the config file, then its drop-ins (FILE.d/*.toml, by name).
  std::vector<std::filesystem::path> files;
  // Where each key the files set was read ("policy.max_resumes" -> "/etc/healthd/healthd.toml:41");
  // an array of tables lists each item's position. A key missing here was left at its default.
  std::map<std::string, std::string> origins;

  // The settings of the check whose section is S::kSection. A section the parser was not told
  // about (a Config built by hand) reads as S's defaults, and is added by the non-const form.
  template <class S>
  const S& section() const {
    if (const auto* s = checks.find(std::string(S::kSection))) return dynamic_cast<const S&>(*s);
    static const S defaults{};
    return defaults;
  }
  template <class S>
  S& section() {
    if (auto* s = checks.find(std::string(S::kSection))) return dynamic_cast<S&>(*s);
    checks.set(std::string(S::kSection), std::make_unique<S>());
    return dynamic_cast<S&>(*checks.find(std::string(S::kSection)));
  }
};

// Reads and checks a config file; `sections` are the [checks.NAME] sections there are (the check
// registry's, checks/registry.hpp, which also offers these two with its list bound). The error reads
// "<file>:<line>:<column>: <what>". Beyond parse_config it checks the config against this host:
// program names ([slurm] scontrol, and each check's: dcgmi, a script's first word) are resolved to
// absolute paths in the children's fixed PATH, and a named instance_type must have a profile.
std::expected<Config, std::string> load_config(const std::filesystem::path& file, std::span<const CheckSection> sections);

// Parses and checks config text, without looking at the host; `source_name` is used in error
// messages.
std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name,
                                                std::span<const CheckSection> sections);

// The drop-in directory of a config file: FILE.d (/etc/healthd/healthd.toml.d). Its *.toml files are
// merged over the file in name order: a later file's key wins, and its arrays of tables
// ([[policy.hook]], [[checks.kernel_log.rule]], ...) are added to the earlier ones.
std::filesystem::path drop_in_dir(const std::filesystem::path& file);

// One key of the effective config: "checks.efa.expected_devices" and its value as TOML text
// (fields.hpp config_text; "(unset)" for an optional left unset).
struct ConfigValue {
  std::string key;
  std::string value;
};
// Every key of `config`, the core's sections first, then each check's in the registry's order.
std::vector<ConfigValue> describe_config(const Config& config, std::span<const CheckSection> sections);

// A node name healthd can use in paths and Slurm commands: not empty, no '/', no space, NUL or
// control character, not "." or "..".
std::expected<void, std::string> check_node_name(const std::string& name);

// The short host name, as Slurm uses it by default for NodeName.
std::string default_node_name();

bool is_valid_log_level(const std::string& level);


}  // namespace ar::healthd
