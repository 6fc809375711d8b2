// A real healthd server (handler, registry, socket) on an asio loop in a background thread, for
// tests that talk to it over its Unix socket the way the plugin and healthctl do.
#pragma once

#include <thread>

#include <asio.hpp>

#include "server/request_handler.hpp"
#include "server/socket_server.hpp"
#include "state/job_registry.hpp"
#include "temp_dir.hpp"

namespace ar::test {

class RunningDaemon {
 public:
  explicit RunningDaemon(std::string node = "n1", std::string socket = "", healthd::ServerLimits limits = test_limits())
      : socket_path(socket.empty() ? (dir / "healthd.sock").string() : socket),
        registry(dir / "jobs.json"),
        info{node, "test", socket_path, dir.path().string(), "none", healthd::WallClock::now()},
        handler(info, registry, [this] { ++changes; }),
        server(io, socket_path, handler, limits) {
    auto r = server.start();
    if (!r) throw std::runtime_error(r.error());
    thread = std::thread([this] { io.run(); });
  }
  ~RunningDaemon() {
    asio::post(io, [this] { server.stop(); });
    io.stop();
    thread.join();
  }

  // The defaults, but idle connections go sooner, so tests that leave one open do not wait a minute.
  static healthd::ServerLimits test_limits() {
    healthd::ServerLimits l;
    l.idle_timeout = std::chrono::milliseconds(2000);
    return l;
  }

  TempDir dir;
  std::string socket_path;
  healthd::JobRegistry registry;
  healthd::DaemonInfo info;
  int changes = 0;
  healthd::RequestHandler handler;
  asio::io_context io;
  healthd::SocketServer server;
  std::thread thread;
};

}  // namespace ar::test
