// The daemon's protocol logic (healthd/server/request_handler) over a job registry, as a session of
// local users meets it: each input line is one request; a line starting with '!' comes from an
// ordinary user (uid 1000), any other from root. Properties: never a crash; every reply can be sent
// (encoded as the server does); the registry the lines built can be saved and read back.
#include <cstdlib>

#include "auto_resume/protocol.hpp"
#include "fuzz_support.hpp"
#include "server/request_handler.hpp"
#include "state/job_registry.hpp"

namespace {

// What the engine would say: enough for status/explain/check to take their full paths.
class Events : public ar::healthd::HealthEvents {
 public:
  void on_task_failure(const ar::proto::TaskExit& exit, const ar::healthd::JobRecord& job) override {
    failures_.push_back({{"job", job.job_id}, {"task", exit.task_rank}, {"status", exit.wait_status}});
  }
  nlohmann::json health_status() override { return {{"checks", nlohmann::json::array()}, {"failures", failures_}}; }
  nlohmann::json explain(std::uint32_t job_id) override { return nlohmann::json::array({{{"job", job_id}}}); }
  std::uint64_t check_now() override { return ++sweeps_; }
  // A node event and one of job 7, so the events filter takes both paths.
  nlohmann::json events(std::uint32_t limit) override {
    return nlohmann::json::array({{{"job_id", 0}, {"limit", limit}}, {{"job_id", 7}, {"limit", limit}}});
  }
  // Admin requests that reach here passed the root check; one code is a conflict, as a real one may be.
  std::expected<nlohmann::json, ar::proto::Error> admin(const AdminRequest& request, const ar::healthd::Peer&) override {
    if (const auto* clear = std::get_if<ar::proto::AdminClear>(&request); clear && clear->code.size() % 2 == 1)
      return std::unexpected(ar::proto::Error{ar::proto::err::kConflict, "not active: " + ar::proto::quote_client_text(clear->code)});
    return nlohmann::json{{"message", "queued"}, {"at_ms", 0}, {"request", ++admin_}};
  }

 private:
  std::uint64_t admin_ = 0;
  nlohmann::json failures_ = nlohmann::json::array();
  std::uint64_t sweeps_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const auto dir = ar::fuzz::fresh_dir("request_handler");
  DaemonInfo info{"n1", "0.0-fuzz", "/run/healthd.sock", dir.string(), "/etc/healthd.toml", WallClock::now()};
  JobRegistry registry(dir / "jobs.json");
  Events events;
  std::size_t changes = 0;
  RequestHandler handler(info, registry, [&] { ++changes; }, &events);

  for (auto line : ar::fuzz::split_lines(ar::fuzz::as_text(data, size))) {
    Peer peer{0, 4242};
    if (line.starts_with('!')) {
      peer.uid = 1000;
      line.erase(0, 1);
    }
    (void)ar::proto::encode(handler.handle(line, peer));  // the server sends exactly this
  }

  if (changes > 0) {
    if (auto saved = registry.save(); !saved) std::abort();
    JobRegistry again(dir / "jobs.json");
    if (auto loaded = again.load(); !loaded) std::abort();  // a registry the daemon wrote must load
  }
  return 0;
}
