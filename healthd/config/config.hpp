// healthd's configuration: parsed from TOML, checked strictly (an unknown key or a wrong type is an
// error naming the file, line and key), then handed to the daemon as plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "checks/check.hpp"

namespace ar::healthd {

// A kernel-log pattern rule: a line matching `pattern` (ECMAScript regex) is a fault `code`.
struct KernelLogRule {
  std::string code;
  std::string pattern;
  Action action = Action::drain;
  std::string message;  // empty: the matched line itself
};

struct KernelLogConfig {
  bool enabled = true;
  std::filesystem::path path = "/dev/kmsg";  // read under the host root
  std::chrono::milliseconds poll_interval{250};
  // How long a matched fault line keeps the check faulty. Log lines are events: without a hold a
  // fault would vanish at the next sweep; without an end, a stale line would keep a node out forever.
  std::chrono::seconds hold{600};
  bool default_rules = true;             // the built-in rules (XID, machine check, Neuron, EFA, I/O)
  std::vector<KernelLogRule> rules;      // the admin's own, checked before the built-in ones
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
};

struct SlurmConfig {
  std::string scontrol = "scontrol";     // squeue is taken from the same directory
  std::chrono::seconds timeout{10};      // one scontrol call; past it Slurm counts as not answering
};

// [[checks.storage.mount]]: a filesystem jobs need (the checkpoint directory), judged by its mount
// entry, free space and inodes (statvfs) and, optionally, a probe write.
struct StorageMountConfig {
  std::filesystem::path path;            // the mount point, under the host root
  std::string fstype;                    // expected type ("lustre", "nfs4"...); empty: any
  double min_free_gib = 0;               // 0: not checked
  double min_free_percent = 0;
  double min_free_inodes_percent = 0;
  bool probe = true;                     // write+fsync+unlink a small file, within probe_timeout
  Action action = Action::drain;         // for every fault of this mount
};

struct StorageConfig {                   // [checks.storage]; enabled when a mount is listed
  std::chrono::seconds interval{60};
  std::chrono::seconds probe_timeout{10};  // statvfs+probe past it: the mount is "not answering"
  std::vector<StorageMountConfig> mounts;
};

// [checks.ec2]: EC2 maintenance events and spot interruption notices through IMDSv2. A notice makes
// healthd signal the auto-resume jobs here to checkpoint, then drain after checkpoint_grace.
struct Ec2Config {
  bool enabled = false;
  std::string endpoint = "http://169.254.169.254";  // %n: the node name (tests)
  std::chrono::seconds interval{5};
  std::chrono::milliseconds timeout{1000};          // one HTTP request
  Action action = Action::drain;
  std::string checkpoint_signal = "USR1";           // to every step, then the batch script (scancel)
  std::chrono::seconds checkpoint_grace{60};
};

// [[checks.script]]: an admin's check program. Exit 0 ok, 1 warn, 2 fault, anything else: broken.
struct ScriptConfig {
  std::string name;
  std::vector<std::string> command;      // argv, no shell
  std::chrono::seconds timeout{30};
  std::chrono::seconds interval{300};
  Action action = Action::drain;         // for exit 2
};

struct Config {
  // [daemon]
  std::string node_name;                               // Slurm node name; default: short host name
  std::filesystem::path socket = "/run/healthd/healthd.sock";
  std::filesystem::path state_dir = "/var/lib/healthd";
  std::filesystem::path host_root = "/";               // every host path is read under it
  std::string log_level = "info";                      // trace, debug, info, warn, error
  std::chrono::seconds ended_job_retention{3600};       // how long finished jobs stay listed

  PolicyConfig policy;        // [policy]
  SlurmConfig slurm;          // [slurm]
  KernelLogConfig kernel_log; // [checks.kernel_log]
  StorageConfig storage;      // [checks.storage], [[checks.storage.mount]]
  Ec2Config ec2;              // [checks.ec2]
  std::vector<ScriptConfig> scripts;  // [[checks.script]]
};

// Reads and checks a config file. The error reads "<file>:<line>:<column>: <what>".
std::expected<Config, std::string> load_config(const std::filesystem::path& file);

// Parses config text; `source_name` is used in error messages. Exposed for tests.
std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name);

// The short host name, as Slurm uses it by default for NodeName.
std::string default_node_name();

bool is_valid_log_level(const std::string& level);

// `path` (absolute) as seen under `root`: "/dev/kmsg" under "/host" is "/host/dev/kmsg".
std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path);

}  // namespace ar::healthd
