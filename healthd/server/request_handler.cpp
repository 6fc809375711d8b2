#include "request_handler.hpp"

#include <type_traits>

#include <spdlog/spdlog.h>
#include <unistd.h>

namespace ar::healthd {

RequestHandler::RequestHandler(const DaemonInfo& info, JobRegistry& registry, std::function<void()> on_registry_change,
                               HealthEvents* events)
    : info_(info), registry_(registry), on_registry_change_(std::move(on_registry_change)), events_(events) {}

nlohmann::json RequestHandler::handle(std::string_view line, const Peer& peer) {
  auto request = proto::parse_request(line);
  if (!request) {
    spdlog::warn("server: refused a message from pid {} uid {}: {}: {}", peer.pid, peer.uid, request.error().code,
                 request.error().message);
    return proto::error_reply(request.error());
  }
  return std::visit(
      [&](const auto& m) -> nlohmann::json {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, proto::Ping>) {
          return proto::ok_reply({{"node", info_.node}, {"version", info_.version}});
        } else if constexpr (std::is_same_v<M, proto::StatusQuery>) {
          return proto::ok_reply(status());
        } else if constexpr (std::is_same_v<M, proto::JobsQuery>) {
          return proto::ok_reply(jobs());
        } else if constexpr (std::is_same_v<M, proto::CheckNow>) {
          // A full sweep may run expensive checks (a DCGM diagnostic): not for anyone to trigger.
          if (peer.uid != 0 && peer.uid != ::geteuid())
            return proto::error_reply({proto::err::kForbidden, "an on-demand check is for root only"});
          if (!events_) return proto::error_reply({proto::err::kInternal, "this daemon runs no checks"});
          return proto::ok_reply({{"sweep", events_->check_now()}});
        } else if constexpr (std::is_same_v<M, proto::ExplainQuery>) {
          nlohmann::json timeline = events_ ? events_->explain(m.job_id) : nlohmann::json::array();
          return proto::ok_reply({{"node", info_.node}, {"job_id", m.job_id}, {"timeline", timeline}});
        } else {
          // Lifecycle messages come from slurmstepd, which runs as root. Anyone else could forge a
          // task failure and trigger a requeue, so they are refused.
          if (peer.uid != 0 && peer.uid != ::geteuid())
            return proto::error_reply({proto::err::kForbidden, "lifecycle messages are accepted from root only"});
          if (m.node != info_.node)
            return proto::error_reply({proto::err::kBadField, "message for node '" + m.node +
                                                                  "' reached the healthd of node '" + info_.node +
                                                                  "' (check the plugin's socket template)"});
          auto now = WallClock::now();
          if constexpr (std::is_same_v<M, proto::StepStart>) {
            registry_.step_started(m, now);
            spdlog::info("job {} step {} started (auto-resume {}, restart {})", m.job_id, proto::step_name(m.step_id),
                         m.auto_resume ? "on" : "off", m.restart_count);
          } else if constexpr (std::is_same_v<M, proto::TaskExit>) {
            registry_.task_exited(m, now);
            spdlog::info("job {} step {} task {} ended: {}", m.job_id, proto::step_name(m.step_id), m.task_rank,
                         describe_wait_status(m.wait_status));
            if (m.wait_status != 0 && events_) events_->on_task_failure(m, registry_.jobs().at(m.job_id));
          } else if constexpr (std::is_same_v<M, proto::StepEnd>) {
            registry_.step_ended(m, now);
            spdlog::info("job {} step {} ended", m.job_id, proto::step_name(m.step_id));
          }
          on_registry_change_();
          return proto::ok_reply();
        }
      },
      *request);
}

nlohmann::json RequestHandler::status() const {
  auto uptime = std::chrono::duration_cast<std::chrono::seconds>(WallClock::now() - info_.started_at).count();
  std::size_t running = 0;
  for (const auto& [id, job] : registry_.jobs())
    if (job.running()) ++running;
  return {{"node", info_.node},
          {"version", info_.version},
          {"pid", ::getpid()},
          {"uptime_s", uptime},
          {"socket", info_.socket},
          {"state_dir", info_.state_dir},
          {"config_file", info_.config_file},
          {"jobs_known", registry_.jobs().size()},
          {"jobs_running", running},
          {"health", events_ ? events_->health_status() : nlohmann::json::object()}};
}

nlohmann::json RequestHandler::jobs() const {
  auto j = registry_.to_json();
  return {{"node", info_.node}, {"jobs", j["jobs"]}};
}

}  // namespace ar::healthd
