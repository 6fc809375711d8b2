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

class RequestHandler {
 public:
  // `on_registry_change` runs after every change of the registry (the daemon persists it there).
  RequestHandler(const DaemonInfo& info, JobRegistry& registry, std::function<void()> on_registry_change);

  nlohmann::json handle(std::string_view line, const Peer& peer);

 private:
  nlohmann::json status() const;
  nlohmann::json jobs() const;

  const DaemonInfo& info_;
  JobRegistry& registry_;
  std::function<void()> on_registry_change_;
};

}  // namespace ar::healthd
