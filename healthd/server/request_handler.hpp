// Turns one request line into one reply: the whole protocol logic of the daemon, without sockets,
// so it is tested by handing it lines.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <expected>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "runtime/log_budget.hpp"
#include "state/job_registry.hpp"

namespace ar::healthd {

struct Peer {
  uid_t uid = 0;
  pid_t pid = 0;
};

// Root, or the uid the daemon itself runs as (a daemon under test): the peers lifecycle messages
// may come from, and whose connections may use the slots kept for root.
bool is_root(const Peer& peer);

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
  // The node's newest notices, newest first (see proto::EventsQuery).
  virtual nlohmann::json events(std::uint32_t limit) = 0;
  // An admin's action, already checked to come from root: journalled, or refused with a `conflict`
  // error saying why. The reply's data on success (see proto::AdminDrain).
  using AdminRequest = std::variant<proto::AdminDrain, proto::AdminResume, proto::AdminClear>;
  virtual std::expected<nlohmann::json, proto::Error> admin(const AdminRequest& request, const Peer& peer) = 0;
};

// The uid of the Slurm user ([slurm] user), looked up once at start. Unknown (or empty): none, and
// only root sees every job; said in the log, since Slurm's own tools then see less than they might.
std::optional<uid_t> slurm_user_uid(const std::string& name);

// Who sees what: every job's record (uid, steps, timeline) is for root, the daemon's own uid and the
// Slurm user; anyone else sees the jobs recorded with their uid at step_start, and the node's health.
// A job that is not theirs answers as one this node does not know, so its existence cannot be probed.
class RequestHandler {
 public:
  // `on_registry_change` runs after every change of the registry (the daemon persists it there).
  // `events` may be null (no checks: the protocol and registry alone). `slurm_uid`: see slurm_user_uid.
  RequestHandler(const DaemonInfo& info, JobRegistry& registry, std::function<void()> on_registry_change,
                 HealthEvents* events = nullptr, std::optional<uid_t> slurm_uid = std::nullopt);

  nlohmann::json handle(std::string_view line, const Peer& peer);

  // Told the code of every error reply the server sends (a refused, malformed or timed-out message,
  // a connection refused as busy), for the metrics. Called on the event loop; must not block.
  void set_error_observer(std::function<void(std::string_view code)> observer) { error_observer_ = std::move(observer); }
  void observe_error(std::string_view code) const {
    if (error_observer_) error_observer_(code);
  }

 private:
  // handle()'s parts: an admin's request, and a lifecycle message (a step's start, a task's exit, a
  // step's end) with the one a user may send (owner_restart_count).
  nlohmann::json admin(const HealthEvents::AdminRequest& request, const Peer& peer);
  template <typename Message>
  nlohmann::json lifecycle(const Message& m, const Peer& peer);
  nlohmann::json owner_restart_count(const proto::StepStart& m, const Peer& peer, WallClock::time_point now);
  bool sees_every_job(const Peer& peer) const;
  bool may_see(const Peer& peer, std::uint32_t job_id) const;
  nlohmann::json status(const Peer& peer) const;
  // The engine's health status as `peer` may see it.
  nlohmann::json health_for(const Peer& peer) const;
  nlohmann::json jobs(const Peer& peer) const;
  nlohmann::json explain(const Peer& peer, std::uint32_t job_id) const;
  nlohmann::json events(const Peer& peer, std::uint32_t limit) const;
  void log_refusal(const Peer& peer, const proto::Error& error);

  const DaemonInfo& info_;
  JobRegistry& registry_;
  std::function<void()> on_registry_change_;
  HealthEvents* events_;
  std::optional<uid_t> slurm_uid_;
  // Any user can send bad messages as fast as they like: their log lines are budgeted.
  LogBudget refusal_log_{10};
  std::function<void(std::string_view)> error_observer_;
};

}  // namespace ar::healthd
