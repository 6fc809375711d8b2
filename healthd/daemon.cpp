#include "daemon.hpp"

#include <algorithm>
#include <csignal>
#include <fstream>

#include <malloc.h>
#include <unistd.h>

#include <asio.hpp>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include "runtime/process.hpp"
#include "actions/slurm_api_client.hpp"
#include "checks/burn_in/burn_in_check.hpp"
#include "checks/ec2/ec2_config.hpp"
#include "checks/gpu/gpu_config.hpp"
#include "collectors/host_path.hpp"
#include "collectors/nvml/nvml_collector.hpp"
#include "checks/registry.hpp"
#include "collectors/imds_client.hpp"
#include "config/fields.hpp"
#include "config/profiles.hpp"
#include "engine/engine.hpp"
#include "engine/health_service.hpp"
#include "state/event_log.hpp"
#include "state/journal.hpp"
#include "engine/responder.hpp"
#include "state/timeline.hpp"
#include "vocabulary/notice.hpp"
#include "telemetry/metrics.hpp"
#include "telemetry/notice_log.hpp"
#include "telemetry/webhook.hpp"
#include "runtime/periodic.hpp"
#include "state/registry_saver.hpp"
#include "server/request_handler.hpp"
#include "server/socket_server.hpp"
#include "state/job_registry.hpp"
#include "state/state_dir.hpp"
#include "version.hpp"
#include "daemon_startup.hpp"

namespace ar::healthd {

void apply_overrides(Config& config, const Overrides& o) {
  if (!o.node_name.empty()) config.node_name = o.node_name;
  if (!o.socket.empty()) config.socket = o.socket;
  if (!o.state_dir.empty()) config.state_dir = o.state_dir;
  config.socket = expand_node_name(config.socket, config.node_name);
  config.state_dir = expand_node_name(config.state_dir, config.node_name);
  config.host_root = expand_node_name(config.host_root, config.node_name);
  for (auto& [name, settings] : config.checks) settings->expand_node(config.node_name);
}

namespace {

// How often poll sweeps run: at the shortest cadence of the checks that have one of their own (EC2
// notices every few seconds, admin scripts, storage probes), at least a second; 0 when none has.
std::chrono::milliseconds poll_period(const std::vector<std::shared_ptr<Check>>& checks) {
  std::chrono::milliseconds every{0};
  for (const auto& c : checks) {
    auto own = c->schedule().every;
    if (own.count() > 0 && (every.count() == 0 || own < every)) every = own;
  }
  return every.count() > 0 ? std::max(every, std::chrono::milliseconds(1000)) : every;
}

// One key a reload changes: "checks.efa.counter_action: \"warn\" -> \"drain\"".
struct ConfigChange {
  std::string key;
  std::string text;
};
std::vector<ConfigChange> changed_keys(const std::vector<ConfigValue>& before, const std::vector<ConfigValue>& after) {
  std::map<std::string, std::string> old_values;
  for (const auto& v : before) old_values[v.key] = v.value;
  std::vector<ConfigChange> out;
  for (const auto& v : after) {
    auto old = old_values.find(v.key);
    if (old == old_values.end() || old->second != v.value)
      out.push_back({v.key, v.key + ": " + (old == old_values.end() ? std::string(kUnset) : old->second) + " -> " + v.value});
  }
  return out;
}

// The running daemon: its parts, in the order they are built (and the reverse of their teardown).
class Daemon {
 public:
  Daemon(Config config, std::filesystem::path config_file, Overrides overrides, State& state)
      : config_(std::move(config)),
        config_file_(std::move(config_file)),
        overrides_(std::move(overrides)),
        state_(state),
        metrics_(config_.node_name, kVersion),
        registry_saver_(io_, state.registry, config_.state_dir / "jobs.json", jobs_here_),
        slurm_(config_.slurm.scontrol, config_.slurm.timeout),
        responder_(config_.node_name, config_.policy, slurm_, state.journal, state.timeline),
        checks_(build_daemon_checks(config_)),
        engine_(checks_, responder_, config_.policy.check_deadline, device_inventories()),
        service_(engine_, state.timeline, state.registry, &state.events),
        info_{config_.node_name, kVersion, config_.socket.string(), config_.state_dir.string(), config_file_.string(),
              WallClock::now()},
        handler_(info_, state.registry,
                 [this] {
                   registry_saver_.changed();
                   service_.registry_changed();
                 },
                 &service_, slurm_user_uid(config_.slurm.user)),
        server_(io_, config_.socket, handler_, config_.server),
        periodic_(io_),
        stop_signals_(io_, SIGTERM, SIGINT),
        reload_signal_(io_, SIGHUP) {
    notices_.add(notice_log_);
    notices_.add(state.events);
    notices_.add(metrics_);
    slurm_.set_call_observer([this](std::string_view call, std::chrono::duration<double> took, bool answered) {
      metrics_.observe_slurm_call(call, took, answered);
    });
    handler_.set_error_observer([this](std::string_view code) { metrics_.observe_protocol_error(code); });
    engine_.on_status([this](const NodeHealth& health) {
      metrics_.observe_health(health);
      // The burn-in stays off a node that is faulty or that healthd holds out (a cure under way).
      node_out_->store(health.standing.faulty || health.standing.own_drain);
    });
    responder_.set_notices(&notices_, config_.notify.action_failing_after);
    // A stat of one path answers in microseconds; 2 s is a filesystem that hangs.
    responder_.set_heartbeat_reader(bounded_heartbeat_reader(std::chrono::seconds(2)));
    set_up_cures();
  }

  // The cure chain's parts that reach the host: NVML (the GPU check's library) to see what blocks a
  // GPU reset, this boot's id (to tell a reboot that happened), and the engine's checks, which forget
  // a fault a reset may have cured before the node is judged again.
  void set_up_cures() {
    const auto* gpu = dynamic_cast<const GpuConfig*>(config_.checks.find("gpu"));
    GpuInspector inspect;
    if (gpu != nullptr && gpu->enabled)
      inspect = [library = gpu->library](const std::string& bus_id) { return collect_one_gpu(library, bus_id); };
    const auto boot_file = under_root(config_.host_root, gpu != nullptr ? gpu->boot_id : "/proc/sys/kernel/random/boot_id");
    std::string boot_id;
    if (std::ifstream in(boot_file); in) std::getline(in, boot_id);
    responder_.set_cure(
        [inspect](const CureConfig& cure, const std::vector<std::string>& gpus, const std::string& node) {
          return reset_gpus(cure, gpus, node, inspect);
        },
        [this](const std::string& code) {
          // On the engine thread, in the middle of carrying out the journal.
          engine_.forget(code);
          engine_.request_sweep("cure step carried out");
        },
        boot_id);
  }

  int run() {
    // The webhook first: a [notify] webhook_url_file that cannot be read is a config error, said
    // before anything starts. Its sender is a thread of its own, fed by the notices.
    auto webhook = Webhook::create(config_.notify, config_.node_name);
    if (!webhook) {
      spdlog::critical("healthd: config: [notify] {}", webhook.error());
      return 2;
    }
    webhook_ = std::move(*webhook);
    if (webhook_) {
      webhook_->on_outcome([this](std::string_view outcome) { metrics_.observe_webhook(outcome); });
      notices_.add(*webhook_);
    }
    // Metrics that cannot be served are said loudly, but do not stop the node's health checks.
    if (auto r = metrics_.start(config_.metrics); !r) spdlog::error("metrics: {}; healthd runs without them", r.error());
    if (auto r = server_.start(); !r) {
      spdlog::critical("healthd: {}", r.error());
      return 1;
    }
    spdlog::info("listening on {}", config_.socket.string());
    service_.registry_changed();  // the engine's view starts from the jobs the registry kept across a restart
    start_schedules();
    wait_for_signals();
    engine_.start();
    start_checks();
    sd_notify(0, "READY=1");
    run_event_loop();
    for (const auto& check : checks_) check->stop();
    engine_.stop();
    // The registry first: the webhook's stop may wait for a POST in flight (cut short, but a name
    // lookup for its body is not) and systemd's stop timeout must not cost the registry.
    registry_saver_.save_and_flush();
    if (webhook_) webhook_->stop();
    metrics_.stop();
    spdlog::info("healthd stopped");
    return 0;
  }

 private:
  std::vector<std::shared_ptr<Check>> build_daemon_checks(const Config& config) {
    BuildContext context{config_.node_name, config_.host_root, config_.state_dir, jobs_here_};
    auto checks = build_checks(config, context);
    // The burn-in is driven by [cure] (it runs the deep check), not by a [checks.*] section.
    if (BurnInCheck::wanted(config.policy.cure))
      checks.push_back(std::make_shared<BurnInCheck>(config.policy.cure, config_.node_name, jobs_here_, node_out_));
    return checks;
  }

  // Periodic sweeps catch faults no event announces (the first at start); poll sweeps run the checks
  // with a cadence of their own that are due; finished jobs are forgotten after the retention time.
  void start_schedules() {
    // The period is read at each re-arm: a reload's check_interval_s takes effect at the next sweep.
    // Spread: the first sweep comes at once, the second at a random point of the interval, and the
    // rest one interval apart from it (PeriodicTasks::Phase).
    periodic_.every([this] { return std::chrono::milliseconds(config_.policy.check_interval); },
                    [this] { service_.judge_now("periodic"); }, true, PeriodicTasks::Phase::spread);
    // Read at each re-arm too: rebuilt checks may have another cadence. With no check of a cadence of
    // its own the task waits a minute and looks again.
    periodic_.every(
        [this] {
          auto every = poll_period(checks_);
          return every.count() > 0 ? every : std::chrono::milliseconds(std::chrono::minutes(1));
        },
        [this] {
          if (poll_period(checks_).count() > 0) service_.judge_now("poll", true);
        },
        false, PeriodicTasks::Phase::spread);
    // systemd's watchdog (WatchdogSec): pinged from the event loop itself at half its period, so a
    // loop that hangs stops the pings and systemd restarts the daemon.
    std::uint64_t watchdog_usec = 0;
    if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0)
      periodic_.every(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::microseconds(watchdog_usec / 2)),
                      [] { sd_notify(0, "WATCHDOG=1"); }, true);
    periodic_.every(std::chrono::minutes(1), [this] {
      if (state_.registry.prune(WallClock::now(), config_.ended_job_retention) > 0) {
        registry_saver_.changed();
        service_.registry_changed();
      }
      // After a burst (hundreds of steps at once) glibc keeps the freed heap; give it back, so the
      // daemon's footprint returns to its idle size.
      ::malloc_trim(0);
    });
  }

  void wait_for_signals() {
    stop_signals_.async_wait([this](const asio::error_code& e, int sig) {
      if (e) return;
      spdlog::info("signal {}: stopping", sig);
      sd_notify(0, "STOPPING=1");
      server_.stop();
      periodic_.stop();
      io_.stop();
    });
    wait_for_reload();
  }

  // SIGHUP (systemctl reload): the files are read again, drop-ins included, and everything that can
  // change at run time is applied: the policy, the log level, the retention, and the checks (rebuilt
  // when a [checks.*] section or the profile changed their settings). What only a restart applies is
  // logged key by key. A config that does not load leaves the running one as it is.
  void wait_for_reload() {
    reload_signal_.async_wait([this](const asio::error_code& e, int) {
      if (e) return;
      sd_notify(0, "RELOADING=1");
      // Whatever goes wrong, the next SIGHUP is still waited for and systemd hears the reload end.
      try {
        reload();
      } catch (const std::exception& ex) {
        spdlog::error("reload: {}; keeping what runs", ex.what());
      }
      sd_notify(0, "READY=1");
      wait_for_reload();
    });
  }

  void reload() {
    auto fresh = load_config(config_file_);
    if (!fresh) {
      spdlog::error("reload: keeping the running config: {}", fresh.error());
      return;
    }
    apply_overrides(*fresh, overrides_);
    // "auto" was detected at start; a reload asks no metadata service (it would block the loop).
    if (fresh->instance_type == "auto") {
      spdlog::info("reload: instance_type \"auto\" is detected at start only; keeping {}",
                   config_.instance_type.empty() ? std::string("no profile") : config_.instance_type);
      fresh->instance_type = config_.instance_type;
    }
    if (auto r = apply_instance_profile(*fresh, false); !r) {
      spdlog::error("reload: keeping the running config: {}", r.error().message);
      return;
    }
    const auto changes = changed_keys(describe_config(config_), describe_config(*fresh));
    bool checks_changed = false;
    std::vector<std::string> applied, needs_restart;
    for (const auto& change : changes) {
      // The burn-in check is built from [cure]: a changed key of it rebuilds the checks too.
      if (change.key.starts_with("checks.") || change.key.starts_with("cure.burn_in") || change.key.starts_with("cure.deep_check"))
        checks_changed = true;
      (applies_at_run_time(change.key) ? applied : needs_restart).push_back(change.text);
    }
    // The new checks are built before anything is changed: if that fails, all of it stays as it is.
    if (checks_changed && !rebuild_checks(*fresh)) return;
    for (const auto& text : needs_restart) spdlog::warn("reload: not applied until healthd restarts: {}", text);
    config_.log_level = fresh->log_level;
    config_.ended_job_retention = fresh->ended_job_retention;
    config_.instance_type = fresh->instance_type;
    config_.profile_dir = fresh->profile_dir;
    if (checks_changed) config_.checks = fresh->checks;
    engine_.reconfigure(fresh->policy);  // read on the engine thread: handed over there
    config_.policy = fresh->policy;
    set_log_level(config_.log_level);
    for (const auto& text : applied) spdlog::info("reload: applied {}", text);
    spdlog::info("reload: config {} reloaded ({} file(s)): {} change(s) applied{}, {} waiting for a restart",
                 config_file_.string(), fresh->files.size(), applied.size(), checks_changed ? ", checks rebuilt" : "",
                 needs_restart.size());
    service_.judge_now("reload");
  }

  // A key whose new value a reload applies; the others (the socket, the state, the node's identity,
  // the Slurm client, the server's limits, the children's environment) are fixed at start.
  static bool applies_at_run_time(const std::string& key) {
    return key.starts_with("policy.") || key.starts_with("cure.") || key.starts_with("checks.") || key == "daemon.log_level" ||
           key == "daemon.ended_job_retention_s" || key == "daemon.instance_type" || key == "daemon.profile_dir";
  }

  // The new checks are built with the same context (the node, the host root and the state directory
  // do not change at run time); then the old ones' event sources stop, and the engine, between two
  // sweeps, has each new check take over its old namesake's position and events and starts it, so
  // no kernel-log line or XID is missed across the reload. False: building failed, nothing changed.
  bool rebuild_checks(const Config& fresh) {
    std::vector<std::shared_ptr<Check>> built;
    try {
      built = build_daemon_checks(fresh);
    } catch (const std::exception& e) {
      spdlog::error("reload: keeping the running config and checks: building the new checks failed: {}", e.what());
      return false;
    }
    for (const auto& check : checks_) check->stop();
    checks_ = std::move(built);
    engine_.replace_checks(checks_, engine_.judge_now());
    return true;
  }


  void start_checks() {
    // Checks that are event sources (kernel log, NVML events) ask the engine for a sweep from their
    // own threads: it judges the jobs of its own view, which the event loop keeps current.
    for (const auto& check : checks_) check->start(engine_.judge_now());
  }

  // No input may end the event loop: a handler that throws is logged and the loop goes on (asio
  // allows run() to be called again after an exception left it).
  void run_event_loop() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("healthd: event loop: {}; carrying on", e.what());
      } catch (...) {
        spdlog::error("healthd: event loop: unknown exception; carrying on");
      }
    }
  }

  Config config_;
  std::filesystem::path config_file_;
  Overrides overrides_;
  State& state_;
  asio::io_context io_;
  std::shared_ptr<std::atomic<std::size_t>> jobs_here_ = std::make_shared<std::atomic<std::size_t>>(0);
  std::shared_ptr<std::atomic<bool>> node_out_ = std::make_shared<std::atomic<bool>>(false);  // set from the node's published health
  Metrics metrics_;                    // outlives the engine, the server and the webhook that feed it
  std::unique_ptr<Webhook> webhook_;   // null: no [notify] webhook
  RegistrySaver registry_saver_;
  SlurmApiClient slurm_;
  NoticeLog notice_log_;
  Notices notices_;  // to the log, the event log, the metrics and the webhook; before the responder that raises them
  Responder responder_;
  std::vector<std::shared_ptr<Check>> checks_;
  Engine engine_;
  HealthService service_;
  DaemonInfo info_;  // the handler keeps a reference
  RequestHandler handler_;
  SocketServer server_;
  PeriodicTasks periodic_;
  asio::signal_set stop_signals_;
  asio::signal_set reload_signal_;
};

}  // namespace

namespace {

// Where a key's effective value came from: the command line, the instance profile, a file
// ("file:line"), or the default. `loaded`/`overridden`/`profiled`: the config described after each
// step of the start (the files; the command line; the profile).
std::string origin_of(const std::string& key, std::size_t i, const std::vector<ConfigValue>& loaded,
                      const std::vector<ConfigValue>& overridden, const std::vector<ConfigValue>& profiled,
                      const Config& config, const Overrides& overrides, const std::string& profile_name) {
  if (profiled[i].value != overridden[i].value) return "profile " + profile_name;
  const bool by_flag = (key == "daemon.node_name" && !overrides.node_name.empty()) ||
                       (key == "daemon.socket" && !overrides.socket.empty()) ||
                       (key == "daemon.state_dir" && !overrides.state_dir.empty());
  if (by_flag && overridden[i].value != loaded[i].value) return "command line";
  if (auto at = config.origins.find(key); at != config.origins.end()) return at->second;
  return "default";
}

// The cure steps this site cannot run (issue 31): a fault whose chain reaches one is held drained for
// an admin there, its reason saying what it needs. Warnings: the config itself is valid. Every step is
// in some chain (the catalogue's defaults use all three). Slurm's RebootProgram is asked of slurmctld.
void write_cure_warnings(const Config& config, std::ostream& out) {
  std::vector<std::string> warnings;
  if (auto m = reset_cannot_run(config.policy.cure)) warnings.push_back("reset_gpu: " + m->why);
  SlurmApiClient slurm(config.slurm.scontrol, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  std::min(config.slurm.timeout, std::chrono::seconds(10))));
  if (auto program = slurm.reboot_program(); !program)
    warnings.push_back("reboot: not known whether slurm.conf has a RebootProgram (slurmctld did not answer: " +
                       program.error().message + ")");
  else if (auto m = reboot_cannot_run(*program))
    warnings.push_back("reboot: " + m->why);
  if (auto m = replace_cannot_run(config.policy.hooks)) warnings.push_back("replace: " + m->why);
  if (warnings.empty()) return;
  out << "warning: cure steps this site cannot run (a fault whose cure chain reaches one is held drained for an admin):\n";
  for (const auto& w : warnings) out << "  " << w << "\n";
}

}  // namespace

int check_config(const std::filesystem::path& config_file, const Overrides& overrides, std::ostream& out,
                 std::ostream& err) {
  auto loaded = load_config(config_file);
  if (!loaded) {
    err << "healthd: config: " << loaded.error() << "\n";
    return 2;
  }
  Config config = std::move(*loaded);
  const auto as_loaded = describe_config(config);
  apply_overrides(config, overrides);
  const auto as_overridden = describe_config(config);
  auto applied = apply_instance_profile(config, false);
  if (!applied) {
    err << "healthd: " << applied.error().message << "\n";
    return 2;
  }
  const auto effective = describe_config(config);
  const std::string profile = *applied                         ? (*applied)->name + " (" + (*applied)->source + ")"
                              : config.instance_type == "auto" ? "auto (detected at start from instance metadata)"
                                                               : "none";
  // The checks are built as the daemon builds them, with a state directory of their own: a check may
  // read its state file when built, and a running daemon's must not be touched.
  std::error_code ec;
  auto scratch = std::filesystem::temp_directory_path(ec) / ("healthd-check-config." + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch, ec);
  BuildContext context{config.node_name, config.host_root, scratch};
  auto checks = build_checks(config, context);
  std::filesystem::remove_all(scratch, ec);
  out << "config " << config_file.string() << ": ok";
  if (config.files.size() > 1) {
    out << " (with";
    for (std::size_t i = 1; i < config.files.size(); ++i) out << " " << config.files[i].string();
    out << ")";
  }
  out << "\n"
      << "node " << config.node_name << ", socket " << config.socket.string() << ", state " << config.state_dir.string()
      << ", host root " << config.host_root.string() << "\n"
      << "profile " << profile << "\n"
      << "every " << config.policy.check_interval.count() << " s, deadline " << config.policy.check_deadline.count()
      << " s; " << checks.size() << " checks:\n";
  for (const auto& check : checks) {
    const auto every = check->schedule().every;
    out << "  " << check->name();
    if (every.count() > 0) out << " (every " << std::chrono::duration_cast<std::chrono::seconds>(every).count() << " s)";
    out << "\n";
  }
  for (const auto& hook : config.policy.hooks)
    out << "hook " << hook.name << " after " << action_names(hook.on) << ": " << hook.command.front() << "\n";
  write_cure_warnings(config, out);
  out << "effective config (key = value  # where it came from):\n";
  const std::string profile_name = *applied ? (*applied)->name : "";
  for (std::size_t i = 0; i < effective.size(); ++i)
    out << effective[i].key << " = " << effective[i].value << "  # "
        << origin_of(effective[i].key, i, as_loaded, as_overridden, effective, config, overrides, profile_name) << "\n";
  return 0;
}

int run_daemon(const std::filesystem::path& config_file, const Overrides& overrides) {
  auto config = load_daemon_config(config_file, overrides);
  if (!config) {
    spdlog::critical("healthd: {}", config.error().message);
    return config.error().exit_code;
  }
  auto state = open_state(*config);
  if (!state) {
    spdlog::critical("healthd: {}", state.error().message);
    return state.error().exit_code;
  }
  spdlog::info("healthd {} starting for node {} (config {}, {} jobs remembered)", kVersion, config->node_name,
               config_file.string(), (*state)->registry.jobs().size());
  Daemon daemon(std::move(*config), config_file, overrides, **state);
  return daemon.run();
}

}  // namespace ar::healthd
