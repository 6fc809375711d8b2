#include "request_handler.hpp"

#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace ar::healthd {

bool is_root(const Peer& peer) { return peer.uid == 0 || peer.uid == ::geteuid(); }

namespace {

// The parser quotes the client text it puts in its messages; this keeps a log line one line of
// bounded length whatever a message holds (every byte outside printable ASCII written \xHH).
std::string one_line(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (unsigned char c : text.substr(0, max_bytes)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

}  // namespace

std::optional<uid_t> slurm_user_uid(const std::string& name) {
  if (name.empty()) return std::nullopt;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0 || !found) {
    spdlog::warn("server: slurm user '{}': {}; only root sees every job", name,
                 rc != 0 ? std::strerror(rc) : "no such user");
    return std::nullopt;
  }
  return found->pw_uid;
}

RequestHandler::RequestHandler(const DaemonInfo& info, JobRegistry& registry, std::function<void()> on_registry_change,
                               HealthEvents* events, std::optional<uid_t> slurm_uid)
    : info_(info),
      registry_(registry),
      on_registry_change_(std::move(on_registry_change)),
      events_(events),
      slurm_uid_(slurm_uid) {}

void RequestHandler::log_refusal(const Peer& peer, const proto::Error& error) {
  if (!refusal_log_.allow()) return;
  if (auto k = refusal_log_.take_suppressed())
    spdlog::warn("server: {} more refused messages were not logged (at most 10 a second)", k);
  spdlog::warn("server: refused a message from pid {} uid {}: {}: {}", peer.pid, peer.uid, error.code,
               one_line(error.message, 256));
}

// Defined before handle(), which instantiates lifecycle<> for each message type inside std::visit:
// clang (16, the asan and fuzz presets) left those instantiations undefined when the template came
// after its use, and the link failed; gcc did not.
nlohmann::json RequestHandler::admin(const HealthEvents::AdminRequest& request, const Peer& peer) {
  if (!is_root(peer)) return proto::error_reply({proto::err::kForbidden, "admin actions (drain, resume, clear) are for root only"});
  if (!events_) return proto::error_reply({proto::err::kInternal, "this daemon runs no checks"});
  auto done = events_->admin(request, peer);
  if (!done) return proto::error_reply(done.error());
  (*done)["node"] = info_.node;
  return proto::ok_reply(std::move(*done));
}

// A step's start, a task's exit, a step's end. They come from slurmstepd, which runs as root. Anyone
// else could forge a task failure and trigger a requeue, so they are refused; the one exception is
// the job's owner correcting the restart count of a step root announced (owner_restart_count).
template <typename Message>
nlohmann::json RequestHandler::lifecycle(const Message& m, const Peer& peer) {
  if (m.node != info_.node && !is_root(peer))
    return proto::error_reply({proto::err::kForbidden, "lifecycle messages are accepted from root only"});
  if (m.node != info_.node)
    return proto::error_reply({proto::err::kBadField, "message for node '" + m.node + "' reached the healthd of node '" +
                                                          info_.node + "' (check the plugin's socket template)"});
  auto now = WallClock::now();
  if (!is_root(peer)) {
    if constexpr (std::is_same_v<Message, proto::StepStart>) return owner_restart_count(m, peer, now);
    return proto::error_reply({proto::err::kForbidden, "lifecycle messages are accepted from root only"});
  }
  if constexpr (std::is_same_v<Message, proto::StepStart>) {
    registry_.step_started(m, now);
    spdlog::info("job {} step {} started (auto-resume {}, restart {})", m.job_id, proto::step_name(m.step_id),
                 m.auto_resume ? "on" : "off", m.restart_count);
  } else if constexpr (std::is_same_v<Message, proto::TaskStart>) {
    registry_.task_started(m, now);
  } else if constexpr (std::is_same_v<Message, proto::TaskExit>) {
    registry_.task_exited(m, now);
    spdlog::info("job {} step {} task {} ended: {}", m.job_id, proto::step_name(m.step_id), m.task_rank,
                 describe_wait_status(m.wait_status));
    if (m.wait_status != 0 && events_) events_->on_task_failure(m, registry_.jobs().at(m.job_id));
  } else if constexpr (std::is_same_v<Message, proto::StepEnd>) {
    registry_.step_ended(m, now);
    spdlog::info("job {} step {} ended", m.job_id, proto::step_name(m.step_id));
  }
  on_registry_change_();
  return proto::ok_reply();
}

nlohmann::json RequestHandler::owner_restart_count(const proto::StepStart& m, const Peer& peer, WallClock::time_point now) {
  if (m.uid == peer.uid && registry_.correct_restart_count(m.job_id, m.step_id, peer.uid, m.restart_count, now)) {
    spdlog::info("job {} step {}: restart count {} from its owner (uid {})", m.job_id, proto::step_name(m.step_id),
                 m.restart_count, peer.uid);
    on_registry_change_();
    return proto::ok_reply();
  }
  return proto::error_reply({proto::err::kForbidden,
                             "a step start from a user is taken only as the restart count of a running step of that "
                             "user's own job, and only upwards"});
}

nlohmann::json RequestHandler::handle(std::string_view line, const Peer& peer) {
  auto request = proto::parse_request(line);
  if (!request) {
    log_refusal(peer, request.error());
    return proto::error_reply(request.error());
  }
  return std::visit(
      [&](const auto& m) -> nlohmann::json {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, proto::Ping>) {
          return proto::ok_reply({{"node", info_.node}, {"version", info_.version}});
        } else if constexpr (std::is_same_v<M, proto::StatusQuery>) {
          return proto::ok_reply(status(peer));
        } else if constexpr (std::is_same_v<M, proto::JobsQuery>) {
          return proto::ok_reply(jobs(peer));
        } else if constexpr (std::is_same_v<M, proto::CheckNow>) {
          // A full sweep may run expensive checks (a DCGM diagnostic): not for anyone to trigger.
          if (!is_root(peer))
            return proto::error_reply({proto::err::kForbidden, "an on-demand check is for root only"});
          if (!events_) return proto::error_reply({proto::err::kInternal, "this daemon runs no checks"});
          return proto::ok_reply({{"sweep", events_->check_now()}});
        } else if constexpr (std::is_same_v<M, proto::ExplainQuery>) {
          return proto::ok_reply(explain(peer, m.job_id));
        } else if constexpr (std::is_same_v<M, proto::EventsQuery>) {
          return proto::ok_reply({{"node", info_.node}, {"events", events(peer, m.limit)}});
        } else if constexpr (std::is_same_v<M, proto::AdminDrain> || std::is_same_v<M, proto::AdminResume> ||
                             std::is_same_v<M, proto::AdminClear>) {
          return admin(HealthEvents::AdminRequest{m}, peer);
        } else {
          return lifecycle(m, peer);
        }
      },
      *request);
}

bool RequestHandler::sees_every_job(const Peer& peer) const {
  return is_root(peer) || (slurm_uid_ && peer.uid == *slurm_uid_);
}

bool RequestHandler::may_see(const Peer& peer, std::uint32_t job_id) const {
  if (sees_every_job(peer)) return true;
  auto it = registry_.jobs().find(job_id);
  return it != registry_.jobs().end() && it->second.uid == peer.uid;
}

// The node's health is for everyone (it is what sinfo shows too); the job counts are of the jobs
// the peer may see, and the sweep a job's failed step asked for names the job only to those who may
// see it (as `jobs` and `explain` hide other users' jobs).
nlohmann::json RequestHandler::status(const Peer& peer) const {
  auto uptime = std::chrono::duration_cast<std::chrono::seconds>(WallClock::now() - info_.started_at).count();
  std::size_t known = 0;
  std::size_t running = 0;
  for (const auto& [id, job] : registry_.jobs()) {
    if (!may_see(peer, id)) continue;
    ++known;
    if (job.running()) ++running;
  }
  return {{"node", info_.node},
          {"version", info_.version},
          {"pid", ::getpid()},
          {"uptime_s", uptime},
          {"socket", info_.socket},
          {"state_dir", info_.state_dir},
          {"config_file", info_.config_file},
          {"jobs_known", known},
          {"jobs_running", running},
          {"health", health_for(peer)}};
}

nlohmann::json RequestHandler::health_for(const Peer& peer) const {
  auto health = events_ ? events_->health_status() : nlohmann::json::object();
  const auto job = health.find("last_sweep_job");
  if (job == health.end()) return health;
  const bool visible = job->is_number_integer() && job->get<std::int64_t>() >= 0 &&
                       job->get<std::int64_t>() <= UINT32_MAX &&
                       may_see(peer, static_cast<std::uint32_t>(job->get<std::int64_t>()));
  if (!visible) {
    health["last_sweep"] = "a step of another user's job failed";
    health.erase("last_sweep_job");
  }
  return health;
}

nlohmann::json RequestHandler::jobs(const Peer& peer) const {
  auto all = registry_.to_json()["jobs"];
  if (sees_every_job(peer)) return {{"node", info_.node}, {"jobs", all}};
  nlohmann::json own = nlohmann::json::array();
  for (auto& j : all)
    if (j["uid"] == peer.uid) own.push_back(std::move(j));
  return {{"node", info_.node}, {"jobs", own}};
}

// The node's own events (drains, incidents, the node returned) are for everyone, as sinfo shows
// them; a job's are for those who may see the job, as its timeline is.
nlohmann::json RequestHandler::events(const Peer& peer, std::uint32_t limit) const {
  if (!events_) return nlohmann::json::array();
  auto all = events_->events(limit);
  if (sees_every_job(peer)) return all;
  nlohmann::json visible = nlohmann::json::array();
  for (auto& e : all) {
    const auto job = e.value("job_id", std::uint64_t{0});
    if (job == 0 || (job <= UINT32_MAX && may_see(peer, static_cast<std::uint32_t>(job)))) visible.push_back(std::move(e));
  }
  return visible;
}

// Someone else's job gets the reply of a job this node never saw (an empty timeline), not
// `forbidden`: a refusal would tell which job ids run here.
nlohmann::json RequestHandler::explain(const Peer& peer, std::uint32_t job_id) const {
  nlohmann::json timeline = nlohmann::json::array();
  const bool visible = may_see(peer, job_id);
  if (events_ && visible) timeline = events_->explain(job_id);
  nlohmann::json reply = {{"node", info_.node}, {"job_id", job_id}, {"timeline", timeline}};
  // The owner, as the registry has it from the job's steps (healthctl shows the user's name).
  if (auto job = registry_.jobs().find(job_id); visible && job != registry_.jobs().end()) reply["uid"] = job->second.uid;
  return reply;
}

}  // namespace ar::healthd
