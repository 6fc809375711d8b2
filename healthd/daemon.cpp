#include "daemon.hpp"

#include <csignal>

#include <asio.hpp>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include "server/request_handler.hpp"
#include "server/socket_server.hpp"
#include "state/job_registry.hpp"
#include "version.hpp"

namespace ar::healthd {

void apply_overrides(Config& config, const Overrides& o) {
  if (!o.node_name.empty()) config.node_name = o.node_name;
  if (!o.socket.empty()) config.socket = o.socket;
  if (!o.state_dir.empty()) config.state_dir = o.state_dir;
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

  std::error_code ec;
  std::filesystem::create_directories(config.state_dir, ec);
  if (ec) {
    spdlog::critical("healthd: state directory {}: {}", config.state_dir.string(), ec.message());
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
  auto persist = [&registry] {
    if (auto r = registry.save(); !r) spdlog::error("state: {}", r.error());
  };
  RequestHandler handler(info, registry, persist);

  asio::io_context io;
  SocketServer server(io, config.socket, handler);
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
      schedule_prune();
    });
  };
  schedule_prune();

  asio::signal_set stop_signals(io, SIGTERM, SIGINT);
  stop_signals.async_wait([&](const asio::error_code& e, int sig) {
    if (e) return;
    spdlog::info("signal {}: stopping", sig);
    sd_notify(0, "STOPPING=1");
    server.stop();
    prune_timer.cancel();
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
        set_log_level(config.log_level);
        spdlog::info("reload: config {} reloaded", config_file.string());
      }
      sd_notify(0, "READY=1");
      wait_reload();
    });
  };
  wait_reload();

  sd_notify(0, "READY=1");
  io.run();
  persist();
  spdlog::info("healthd stopped");
  return 0;
}

}  // namespace ar::healthd
