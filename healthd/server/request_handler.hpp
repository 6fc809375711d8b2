// Turns one request line into one reply: the whole protocol logic of the daemon, without sockets,
// so it is tested by handing it lines.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "state/job_registry.hpp"

namespace ar::healthd {

struct Peer {
  uid_t uid = 0;
  pid_t pid = 0;
};

struct DaemonInfo {
  std::string node;
  std::string version;
  std::string socket;
  std::string state_dir;
  std::string config_file;
  WallClock::time_point started_at;
};

// What the rest of the daemon offers the protocol: where failures go, and what status/explain show.
class HealthEvents {
 public:
  virtual ~HealthEvents() = default;
  // A task of a step ended with a non-zero status or a signal.
  virtual void on_task_failure(const proto::TaskExit& exit, const JobRecord& job) = 0;
  virtual nlohmann::json health_status() = 0;
  virtual nlohmann::json explain(std::uint32_t job_id) = 0;
  // Queues a sweep of every check; returns its number (see proto::CheckNow).
  virtual std::uint64_t check_now() = 0;
};

class RequestHandler {
 public:
  // `on_registry_change` runs after every change of the registry (the daemon persists it there).
  // `events` may be null (no checks: the protocol and registry alone).
  RequestHandler(const DaemonInfo& info, JobRegistry& registry, std::function<void()> on_registry_change,
                 HealthEvents* events = nullptr);

  nlohmann::json handle(std::string_view line, const Peer& peer);

 private:
  nlohmann::json status() const;
  nlohmann::json jobs() const;

  const DaemonInfo& info_;
  JobRegistry& registry_;
  std::function<void()> on_registry_change_;
  HealthEvents* events_;
};

}  // namespace ar::healthd
