// healthd's configuration: parsed from TOML, checked strictly (an unknown key or a wrong type is an
// error naming the file, line and key), then handed to the daemon as plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "checks/dcgm_check.hpp"
#include "checks/gpu_judges.hpp"
#include "checks/xid_policy.hpp"
#include "server/limits.hpp"

namespace ar::healthd {

// A kernel-log pattern rule: a line matching `pattern` (RE2 syntax) is a fault `code`.
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

struct GpuConfig {
  bool enabled = true;                        // off: neither NVML nor XIDs are looked at
  std::string library = "libnvidia-ml.so.1";  // dlopen name or absolute path
  std::chrono::milliseconds deadline{5000};   // one NVML snapshot; past it: "NVML not answering"
  bool events = true;                         // watch NVML's event set for XIDs as they happen
  GpuThresholds thresholds;                   // expected count, ECC, PCIe, NVLink, temperature...
  // XIDs (from NVML events and kernel-log lines)
  std::chrono::seconds xid_hold{600};         // how long an XID fault holds after its last event
  XidAction xid_unknown = XidAction::drain;   // an XID the table does not list
  std::map<unsigned, XidRule> xid_rules;      // [[checks.gpu.xid]]: the admin's entries over the defaults
  std::filesystem::path boot_id = "/proc/sys/kernel/random/boot_id";  // read under the host root
};

// [checks.efa]: EFA devices, their ports and their error counters (see checks/efa_check.hpp).
struct EfaConfig {
  bool enabled = true;
  // How many EFA devices the node must have. Unset: the instance profile's count, else 0 (not expected:
  // a node without EFA passes as "not applicable").
  std::optional<std::uint32_t> expected_devices;
  // Error counters judged by how much they rose within the window; a fall (driver reload) starts over.
  std::chrono::seconds counter_window{300};
  // Port counters (ports/<n>/hw_counters) and device counters (hw_counters: cmds_err,
  // no_completion_cmds) share one table: the efa driver's names for the two never overlap.
  std::map<std::string, std::uint64_t> counter_thresholds = {
      {"rdma_read_wr_err", 10},          {"rdma_write_wr_err", 10},        {"unresponsive_remote_events", 10},
      {"impaired_remote_conn_events", 10}, {"retrans_timeout_events", 100}, {"rx_drops", 10000},
      {"cmds_err", 10},                  {"no_completion_cmds", 0},
  };
  Action counter_action = Action::warn;  // a counter past its threshold: warn by default (network-wide events)
};

// [checks.neuron]: AWS Trainium/Inferentia devices (see checks/neuron_check.hpp).
struct NeuronConfig {
  bool enabled = true;
  std::optional<std::uint32_t> expected_devices;  // as for EFA
  std::uint64_t max_uncorrected = 0;              // per device and counter; above it is a fault
  // Correctable ECC errors (mem_ecc_corrected, sram_ecc_corrected, driver 2.30.2 and later) are data:
  // shown, never judged unless the admin sets a limit; above it, corrected_action (warn by default).
  std::optional<std::uint64_t> max_corrected;
  Action corrected_action = Action::warn;
  // What a subsystem named in the driver's unhealthy_components (health_status) calls for.
  Action unhealthy_action = Action::drain;
  // healthcheck_heartbeat unchanged for this long: a warning that the health bitmap may be stale.
  // 0 (the default): not judged, only shown; the driver does not document how often it moves.
  std::chrono::seconds heartbeat_stall{0};
};

// [checks.node]: the host itself (see checks/node_check.hpp). Unset expectations are not judged.
struct NodeConfig {
  bool enabled = true;
  std::optional<std::uint32_t> expected_cpus;  // online CPUs; unset: the profile's vCPUs
  std::optional<double> min_memory_gib;        // MemTotal; unset: the profile's memory less memory_slack_pct
  double memory_slack_pct = 10;                // the kernel keeps part of the nominal memory for itself
  double min_shm_gib = 0;                      // size of /dev/shm; 0: not judged
  Action clock_action = Action::warn;          // clock not synchronised (adjtimex); none: not judged
  std::vector<std::string> required_processes = {"munged", "slurmd"};  // by /proc/*/comm
};

// What a job healthd requeues gets in the queue: "top" starts it before other pending jobs that fit
// (a fixed top priority while it waits, Slurm's own again once it runs); "keep": Slurm's priority.
enum class RequeuePriority { top, keep };

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
};

struct SlurmConfig {
  std::string scontrol = "scontrol";     // for `scontrol reboot` only (libslurm 22.05 has no reboot call); a
                                         // bare name is resolved at load in /usr/sbin:/usr/bin:/sbin:/bin
  std::chrono::seconds timeout{10};      // one Slurm call; past it Slurm counts as not answering
  std::string user = "slurm";            // SlurmUser: sees every job over the socket, as root does
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
  std::filesystem::path probe_dir;       // where, relative to path (plain names); empty: the mount root
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
  std::string instance_type;                           // profile name (config/profiles.hpp); empty: none
  std::filesystem::path profile_dir = "/etc/healthd/profiles.d";  // the admin's own profiles (*.toml)
  // Variables of healthd's environment its children (scontrol, scripts, dcgmi) get besides
  // SLURM_CONF and TZ; everything else is left out (actions/process.hpp).
  std::vector<std::string> child_env;

  PolicyConfig policy;        // [policy]
  SlurmConfig slurm;          // [slurm]
  ServerLimits server;        // [server]
  KernelLogConfig kernel_log; // [checks.kernel_log]
  GpuConfig gpu;              // [checks.gpu]
  DcgmConfig dcgm;            // [checks.dcgm]
  EfaConfig efa;              // [checks.efa]
  NeuronConfig neuron;        // [checks.neuron]
  NodeConfig node;            // [checks.node]
  StorageConfig storage;      // [checks.storage], [[checks.storage.mount]]
  Ec2Config ec2;              // [checks.ec2]
  std::vector<ScriptConfig> scripts;  // [[checks.script]]
};

// Reads and checks a config file. The error reads "<file>:<line>:<column>: <what>". Beyond
// parse_config it checks the config against this host: program names ([slurm] scontrol, [checks.dcgm]
// dcgmi when enabled, each script's first word) are resolved to absolute paths in the children's
// fixed PATH, and a named instance_type must have a profile.
std::expected<Config, std::string> load_config(const std::filesystem::path& file);

// Parses and checks config text, without looking at the host; `source_name` is used in error
// messages. Exposed for tests.
std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name);

// A node name healthd can use in paths and Slurm commands: not empty, no '/', no space, NUL or
// control character, not "." or "..".
std::expected<void, std::string> check_node_name(const std::string& name);

// The short host name, as Slurm uses it by default for NodeName.
std::string default_node_name();

bool is_valid_log_level(const std::string& level);

// `path` (absolute) as seen under `root`: "/dev/kmsg" under "/host" is "/host/dev/kmsg".
std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path);

}  // namespace ar::healthd
