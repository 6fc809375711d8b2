// Connects the protocol (server/) to the engine: a failed auto-resume step becomes a sweep, status
// and explain read the engine's state. Runs on the event loop, which owns the job registry; it hands
// work to the engine thread and never blocks, nor writes a file.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "engine/engine.hpp"
#include "state/event_log.hpp"
#include "state/timeline.hpp"
#include "server/request_handler.hpp"
#include "state/job_registry.hpp"

namespace ar::healthd {

// The registry's view of what runs here, for the engine (which must not touch the registry itself).
std::vector<LocalJob> running_jobs(const JobRegistry& registry);

class HealthService : public HealthEvents {
 public:
  // `events`: the node's event log (healthctl events); null: none kept.
  HealthService(Engine& engine, const Timeline& timeline, const JobRegistry& registry, const EventLog* events = nullptr)
      : engine_(engine), timeline_(timeline), registry_(registry), events_(events) {}

  void on_task_failure(const proto::TaskExit& exit, const JobRecord& job) override;
  nlohmann::json health_status() override { return engine_.status(); }
  nlohmann::json explain(std::uint32_t job_id) override { return timeline_.to_json(job_id); }
  std::uint64_t check_now() override;
  nlohmann::json events(std::uint32_t limit) override;
  std::expected<nlohmann::json, proto::Error> admin(const AdminRequest& request, const Peer& peer) override;

  // A sweep for `why`, judging the jobs of the engine's view.
  void judge_now(const std::string& why, bool poll = false);
  // The registry changed (on the event loop, which owns it): the engine's view of the jobs follows.
  void registry_changed();

 private:
  Engine& engine_;
  const Timeline& timeline_;
  const JobRegistry& registry_;
  const EventLog* events_;
  std::uint64_t next_request_ = 0;  // event loop only
  // (job, attempt, step) -> failed tasks seen; event loop only.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> failed_steps_;
};

}  // namespace ar::healthd
