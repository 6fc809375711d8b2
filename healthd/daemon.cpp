#include "daemon.hpp"

#include <algorithm>
#include <csignal>
#include <map>
#include <tuple>

#include <malloc.h>

#include <asio.hpp>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include "actions/process.hpp"
#include "actions/slurm_api_client.hpp"
#include "checks/dcgm_check.hpp"
#include "checks/gpu_check.hpp"
#include "checks/kernel_log_check.hpp"
#include "checks/xid_check.hpp"
#include "collectors/nvml/nvml_events.hpp"
#include "checks/efa_check.hpp"
#include "checks/neuron_check.hpp"
#include "checks/node_check.hpp"
#include "collectors/imds_client.hpp"
#include "config/profiles.hpp"
#include "checks/ec2_check.hpp"
#include "checks/script_check.hpp"
#include "checks/storage_check.hpp"
#include "engine/engine.hpp"
#include "engine/journal.hpp"
#include "engine/responder.hpp"
#include "engine/timeline.hpp"
#include "server/request_handler.hpp"
#include "server/socket_server.hpp"
#include "state/background_writer.hpp"
#include "state/state_dir.hpp"
#include "state/job_registry.hpp"
#include "version.hpp"

namespace ar::healthd {

namespace {
// "%n" in a path stands for the node name, so one config serves several daemons on one host.
std::filesystem::path expand_node(const std::filesystem::path& p, const std::string& node) {
  std::string s = p.string();
  for (std::size_t pos; (pos = s.find("%n")) != std::string::npos;) s.replace(pos, 2, node);
  return s;
}
}  // namespace

void apply_overrides(Config& config, const Overrides& o) {
  if (!o.node_name.empty()) config.node_name = o.node_name;
  if (!o.socket.empty()) config.socket = o.socket;
  if (!o.state_dir.empty()) config.state_dir = o.state_dir;
  config.socket = expand_node(config.socket, config.node_name);
  config.state_dir = expand_node(config.state_dir, config.node_name);
  config.host_root = expand_node(config.host_root, config.node_name);
  config.ec2.endpoint = expand_node(config.ec2.endpoint, config.node_name).string();
  for (auto& script : config.scripts)
    for (auto& word : script.command) word = expand_node(word, config.node_name).string();
}

namespace {

void set_log_level(const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); }

// Moves an unreadable state file aside so the daemon can start, keeping it for a post-mortem.
void quarantine(const std::filesystem::path& file) {
  auto aside = file;
  aside += ".corrupt." + std::to_string(::time(nullptr));
  std::error_code ec;
  std::filesystem::rename(file, aside, ec);
  spdlog::error("state: moved the unreadable registry to {}{}", aside.string(), ec ? ": " + ec.message() : "");
}

// The registry's view of what runs here, for the engine (which must not touch the registry itself).
std::vector<LocalJob> running_jobs(const JobRegistry& registry) {
  std::vector<LocalJob> jobs;
  for (const auto& [id, job] : registry.jobs())
    if (job.running()) jobs.push_back({id, job.restart_count, job.auto_resume(), job.max_resumes});
  return jobs;
}

// Connects the protocol to the engine: failures become sweeps, status and explain read its state.
class HealthService : public HealthEvents {
 public:
  HealthService(Engine& engine, Timeline& timeline, JobRegistry& registry)
      : engine_(engine), timeline_(timeline), registry_(registry) {}

  void on_task_failure(const proto::TaskExit& exit, const JobRecord& job) override {
    bool auto_resume = false;
    if (auto it = job.steps.find({job.restart_count, exit.step_id}); it != job.steps.end())
      auto_resume = it->second.auto_resume;
    // Only auto-resume steps make healthd look at once; a faulty node under any job is still found
    // by the periodic sweep and the kernel-log events.
    if (!auto_resume) return;
    // The first failed task of a step says all a sweep needs; a step of thousands of tasks failing
    // at once (NCCL aborting everywhere) must not write the timeline and queue a sweep per task.
    auto [it, first] = failed_steps_.try_emplace({exit.job_id, job.restart_count, exit.step_id}, 0);
    ++it->second;
    if (!first) return;
    if (failed_steps_.size() > 4096) failed_steps_.clear();  // bounded; forgetting only costs a sweep
    timeline_.record(exit.job_id, {WallClock::now(), exit.node, "step failed",
                                   "step " + proto::step_name(exit.step_id) + " task " +
                                       std::to_string(exit.task_rank) + ": " + describe_wait_status(exit.wait_status)});
    StepFailure f{exit.job_id, exit.step_id, job.restart_count, exit.task_rank, exit.wait_status, true, job.max_resumes};
    engine_.request_sweep("job " + std::to_string(exit.job_id) + " step failed", running_jobs(registry_), f);
  }
  nlohmann::json health_status() override { return engine_.status(); }
  nlohmann::json explain(std::uint32_t job_id) override { return timeline_.to_json(job_id); }
  std::uint64_t check_now() override { return engine_.request_sweep("on demand", running_jobs(registry_), std::nullopt, true); }

 private:
  Engine& engine_;
  Timeline& timeline_;
  JobRegistry& registry_;
  // (job, attempt, step) -> failed tasks seen; event loop only.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> failed_steps_;
};

}  // namespace

int run_daemon(const std::filesystem::path& config_file, const Overrides& overrides) {
  auto loaded = load_config(config_file);
  if (!loaded) {
    spdlog::critical("healthd: config: {}", loaded.error());
    return 2;
  }
  Config config = *loaded;
  apply_overrides(config, overrides);
  set_log_level(config.log_level);
  set_child_environment(config.child_env);
  if (config.instance_type == "auto") {
    // Detected from EC2 instance metadata (the same endpoint as the EC2 notices). Off EC2, or with
    // IMDS down, the daemon checks without a profile rather than not start.
    if (auto detected = fetch_instance_type(config.ec2.endpoint, std::chrono::seconds(2)); detected) {
      spdlog::info("profile: instance type {} (from instance metadata at {})", *detected, config.ec2.endpoint);
      config.instance_type = *detected;
    } else {
      spdlog::warn("profile: instance type not detected: {}; checking without a profile", detected.error());
    }
  }
  if (!config.instance_type.empty()) {
    // The profile fills the expected counts the config leaves unset; a named profile that does not
    // exist is a config error, "auto" without a way to detect the type is not.
    auto profile = resolve_profile(config.instance_type, config.profile_dir);
    if (profile) {
      apply_profile(config, *profile);
      spdlog::info("profile {}: {} GPUs, {} EFA, {} Neuron, {} CPUs expected ({})", profile->name, profile->gpus,
                   profile->efa_devices, profile->neuron_devices, profile->cpus, profile->source);
    } else if (config.instance_type == "auto") {
      spdlog::warn("healthd: profile: {}; checking without a profile", profile.error());
    } else {
      spdlog::critical("healthd: config: {}", profile.error());
      return 2;
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(config.state_dir, ec);
  if (ec) {
    spdlog::critical("healthd: state directory {}: {}", config.state_dir.string(), ec.message());
    return 1;
  }
  if (auto safe = secure_state_dir(config.state_dir); !safe) {
    spdlog::critical("healthd: state directory {}", safe.error());
    return 1;
  }

  JobRegistry registry(config.state_dir / "jobs.json");
  if (auto r = registry.load(); !r) {
    spdlog::error("healthd: state: {}", r.error());
    quarantine(config.state_dir / "jobs.json");
  }
  spdlog::info("healthd {} starting for node {} (config {}, {} jobs remembered)", kVersion, config.node_name,
               config_file.string(), registry.jobs().size());

  DaemonInfo info{config.node_name,        kVersion, config.socket.string(), config.state_dir.string(),
                  config_file.string(), WallClock::now()};
  // How many jobs run here, for checks that must wait for an idle node (the DCGM diagnostic); kept
  // on the event loop, which owns the registry, read by the engine thread.
  auto jobs_here = std::make_shared<std::atomic<std::size_t>>(running_jobs(registry).size());
  asio::io_context io;
  // The registry is saved (whole) at most every 100 ms, not once per message, and the write and its
  // fsync happen on a writer thread: the plugin waits for each reply (within its timeout), and a burst
  // of hundreds of steps must not queue behind disk writes. The event loop only serialises; when that
  // takes long (a big registry under sustained load) the next save waits ten times as long, so it never
  // takes more than about a tenth of the loop. A crash loses at most that much of the step records;
  // everything Slurm is asked to do goes through the journal, which is written at once.
  BackgroundWriter registry_writer(config.state_dir / "jobs.json");
  asio::steady_timer registry_flush(io);
  bool registry_dirty = false;
  auto flush_delay = std::chrono::milliseconds(100);
  auto save_registry = [&registry, &registry_dirty, &registry_writer, &flush_delay, jobs_here] {
    registry_dirty = false;
    const auto t0 = std::chrono::steady_clock::now();
    registry_writer.submit(registry.serialize());
    jobs_here->store(running_jobs(registry).size());
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    flush_delay = std::clamp(10 * took, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  };
  auto persist = [&registry_dirty, &registry_flush, &save_registry, &flush_delay] {
    if (registry_dirty) return;
    registry_dirty = true;
    registry_flush.expires_after(flush_delay);
    registry_flush.async_wait([&save_registry](const asio::error_code& e) {
      if (!e) save_registry();
    });
  };
  Journal journal(config.state_dir / "journal.json");
  if (auto r = journal.load(); !r) {
    // Losing the journal could lose an action; refuse to run on a guess and say what to look at.
    spdlog::critical("healthd: journal: {} (move it aside to start without it)", r.error());
    return 1;
  }
  Timeline timeline(config.state_dir / "timeline.json");
  if (auto r = timeline.load(); !r) {
    spdlog::error("healthd: timeline: {}", r.error());
    quarantine(config.state_dir / "timeline.json");
  }
  if (!journal.pending().empty())
    spdlog::warn("journal: {} action(s) left pending by the last run will be carried out", journal.pending().size());

  SlurmApiClient slurm(config.slurm.scontrol, config.slurm.timeout);
  Responder responder(config.node_name, config.policy, slurm, journal, timeline);
  std::vector<std::shared_ptr<Check>> checks;
  std::shared_ptr<KernelLogCheck> kernel_log;
  if (config.kernel_log.enabled) {
    kernel_log = std::make_shared<KernelLogCheck>(config.kernel_log, config.host_root,
                                                  config.state_dir / "kernel_log.json");
    checks.push_back(kernel_log);
  }
  std::shared_ptr<XidCheck> xids;
  std::unique_ptr<NvmlEventWatcher> nvml_events;
  if (config.gpu.enabled) {
    auto policy = XidPolicy::defaults();
    policy.set_unknown(config.gpu.xid_unknown);
    for (const auto& [xid, rule] : config.gpu.xid_rules) policy.set(xid, rule);
    xids = std::make_shared<XidCheck>(policy, config.gpu.xid_hold, config.state_dir / "gpu_xid.json",
                                      under_root(config.host_root, config.gpu.boot_id));
    // The GPU check first: its snapshot names each GPU (index, bus id, UUID) for the XID check, which
    // judges after it in the same sweep; the other way round, the first sweep after a restart drained
    // with "XID 79 on 0000:17:00" and no GPU named.
    checks.push_back(std::make_shared<GpuCheck>(config.gpu.library, config.gpu.thresholds, config.gpu.deadline, xids));
    checks.push_back(xids);
    if (kernel_log)
      kernel_log->set_line_hook([xids](const std::string& line) {
        auto e = parse_xid_line(line);
        if (!e) return KernelLogCheck::LineVerdict::not_mine;
        return xids->record(*e) ? KernelLogCheck::LineVerdict::new_fault : KernelLogCheck::LineVerdict::taken;
      });
  }
  if (config.dcgm.enabled) checks.push_back(std::make_shared<DcgmCheck>(config.dcgm, jobs_here));
  if (config.efa.enabled) checks.push_back(std::make_shared<EfaCheck>(config.efa, config.host_root));
  if (config.neuron.enabled) checks.push_back(std::make_shared<NeuronCheck>(config.neuron, config.host_root));
  if (config.node.enabled) checks.push_back(std::make_shared<NodeCheck>(config.node, config.host_root));
  if (!config.storage.mounts.empty())
    checks.push_back(std::make_shared<StorageCheck>(config.storage, config.host_root, config.node_name));
  if (config.ec2.enabled) checks.push_back(std::make_shared<Ec2Check>(config.ec2));
  for (const auto& script : config.scripts) checks.push_back(std::make_shared<ScriptCheck>(script));
  Engine engine(checks, responder, config.policy.check_deadline);
  HealthService service(engine, timeline, registry);
  RequestHandler handler(info, registry, persist, &service, slurm_user_uid(config.slurm.user));

  SocketServer server(io, config.socket, handler, config.server);
  if (auto r = server.start(); !r) {
    spdlog::critical("healthd: {}", r.error());
    return 1;
  }
  spdlog::info("listening on {}", config.socket.string());

  // Finished jobs are forgotten after the retention time; checked once a minute.
  asio::steady_timer prune_timer(io);
  std::function<void()> schedule_prune = [&] {
    prune_timer.expires_after(std::chrono::minutes(1));
    prune_timer.async_wait([&](const asio::error_code& e) {
      if (e) return;
      if (registry.prune(WallClock::now(), config.ended_job_retention) > 0) persist();
      // After a burst (hundreds of steps at once) glibc keeps the freed heap; give it back, so the
      // daemon's footprint returns to its idle size.
      ::malloc_trim(0);
      schedule_prune();
    });
  };
  schedule_prune();

  // Periodic sweeps catch faults no event announces; the first one runs at start.
  asio::steady_timer sweep_timer(io);
  std::function<void()> schedule_sweep = [&] {
    engine.request_sweep("periodic", running_jobs(registry));
    sweep_timer.expires_after(config.policy.check_interval);
    sweep_timer.async_wait([&](const asio::error_code& e) {
      if (!e) schedule_sweep();
    });
  };

  // Kernel-log events: a new fault line makes the node be judged now, not at the next sweep, so a job
  // hung on a dead GPU is requeued without waiting for it to exit. The log is read and matched on the
  // check's own thread (no line can stall the socket server); the sweep is asked for on the event
  // loop, which owns the job registry.
  auto on_kmsg_fault = [&io, &engine, &registry] {
    asio::post(io, [&engine, &registry] { engine.request_sweep("kernel log event", running_jobs(registry)); });
  };

  // NVML events: an XID as it happens makes the node be judged now (on the event loop, which owns the
  // job registry). The watcher thread only records and posts.
  if (xids && config.gpu.events) {
    nvml_events = std::make_unique<NvmlEventWatcher>(config.gpu.library, [&io, &engine, &registry, xids](const NvmlEvent& ev) {
      XidEvent e{ev.xid, ev.bus_id.empty() ? std::string() : short_pci_address(ev.bus_id), "nvml",
                 ev.double_bit_ecc ? "NVML event: double-bit ECC error" : "NVML event: XID " + std::to_string(ev.xid),
                 XidCheck::Clock::now()};
      if (xids->record(e))
        asio::post(io, [&engine, &registry] { engine.request_sweep("NVML XID event", running_jobs(registry)); });
    });
  }
  // Checks with a cadence of their own (EC2 notices give minutes of warning and are polled every few
  // seconds; admin scripts and storage probes have their intervals) are run by poll sweeps, at the
  // shortest such cadence; each poll runs only the ones that are due.
  std::chrono::milliseconds poll_every{0};
  for (const auto& c : checks) {
    auto every = c->schedule().every;
    if (every.count() > 0 && (poll_every.count() == 0 || every < poll_every)) poll_every = every;
  }
  if (poll_every.count() > 0) poll_every = std::max(poll_every, std::chrono::milliseconds(1000));
  asio::steady_timer poll_timer(io);
  std::function<void()> schedule_poll = [&] {
    poll_timer.expires_after(poll_every);
    poll_timer.async_wait([&](const asio::error_code& e) {
      if (e) return;
      engine.request_sweep("poll", running_jobs(registry), std::nullopt, false, true);
      schedule_poll();
    });
  };

  asio::signal_set stop_signals(io, SIGTERM, SIGINT);
  stop_signals.async_wait([&](const asio::error_code& e, int sig) {
    if (e) return;
    spdlog::info("signal {}: stopping", sig);
    sd_notify(0, "STOPPING=1");
    server.stop();
    prune_timer.cancel();
    sweep_timer.cancel();
    poll_timer.cancel();
    io.stop();
  });

  asio::signal_set reload_signal(io, SIGHUP);
  std::function<void()> wait_reload = [&] {
    reload_signal.async_wait([&](const asio::error_code& e, int) {
      if (e) return;
      sd_notify(0, "RELOADING=1");
      auto fresh = load_config(config_file);
      if (!fresh) {
        spdlog::error("reload: keeping the running config: {}", fresh.error());
      } else {
        apply_overrides(*fresh, overrides);
        if (fresh->socket != config.socket || fresh->state_dir != config.state_dir ||
            fresh->node_name != config.node_name)
          spdlog::warn("reload: node_name, socket and state_dir take effect only on restart");
        config.log_level = fresh->log_level;
        config.ended_job_retention = fresh->ended_job_retention;
        // Policy is read on the engine thread: hand it over there. Checks are rebuilt only on restart.
        engine.reconfigure(fresh->policy);
        config.policy = fresh->policy;
        set_log_level(config.log_level);
        spdlog::info("reload: config {} reloaded", config_file.string());
      }
      sd_notify(0, "READY=1");
      wait_reload();
    });
  };
  wait_reload();

  engine.start();
  if (nvml_events) nvml_events->start();
  schedule_sweep();
  if (kernel_log) kernel_log->start(on_kmsg_fault);
  if (poll_every.count() > 0) schedule_poll();
  sd_notify(0, "READY=1");
  // No input may end the event loop: a handler that throws is logged and the loop goes on (asio
  // allows run() to be called again after an exception left it).
  for (;;) {
    try {
      io.run();
      break;
    } catch (const std::exception& e) {
      spdlog::error("healthd: event loop: {}; carrying on", e.what());
    } catch (...) {
      spdlog::error("healthd: event loop: unknown exception; carrying on");
    }
  }
  if (kernel_log) kernel_log->stop();
  if (nvml_events) nvml_events->stop();
  engine.stop();
  save_registry();  // whatever changed since the last write
  registry_writer.flush();
  spdlog::info("healthd stopped");
  return 0;
}

}  // namespace ar::healthd
