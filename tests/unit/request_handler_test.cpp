#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "log_capture.hpp"
#include "server/request_handler.hpp"

using namespace ar::healthd;
namespace proto = ar::proto;

namespace {
struct HandlerFixture {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  int changes = 0;
  RequestHandler handler{info, registry, [this] { ++changes; }};
};
std::string line(const proto::Request& r) { return proto::to_json(r).dump(); }
}  // namespace

TEST(RequestHandler, LifecycleFromRootChangesTheRegistry) {
  HandlerFixture f;
  auto reply = f.handler.handle(line(proto::StepStart{4, 0, "n1", 1000, true, 0}), Peer{0, 1});
  EXPECT_EQ(reply["ok"], true);
  EXPECT_EQ(f.changes, 1);
  EXPECT_EQ(f.registry.jobs().count(4), 1u);
}

TEST(RequestHandler, LifecycleFromAUserIsForbidden) {
  HandlerFixture f;
  auto reply = f.handler.handle(line(proto::TaskExit{4, 0, "n1", 0, 256}), Peer{4242, 1});
  EXPECT_EQ(reply["ok"], false);
  EXPECT_EQ(reply["error"]["code"], proto::err::kForbidden);
  EXPECT_EQ(f.changes, 0);
  EXPECT_TRUE(f.registry.jobs().empty());
}

TEST(RequestHandler, QueriesAreOpenToUsers) {
  HandlerFixture f;
  auto status = f.handler.handle(line(proto::StatusQuery{}), Peer{4242, 1});
  ASSERT_EQ(status["ok"], true);
  EXPECT_EQ(status["data"]["node"], "n1");
  EXPECT_EQ(status["data"]["version"], "1.2.3");
  auto jobs = f.handler.handle(line(proto::JobsQuery{}), Peer{4242, 1});
  ASSERT_EQ(jobs["ok"], true);
  EXPECT_TRUE(jobs["data"]["jobs"].empty());
}

TEST(RequestHandler, ErrorRepliesCarryVersionAndCode) {
  HandlerFixture f;
  auto reply = f.handler.handle("][", Peer{0, 1});
  EXPECT_EQ(reply["v"], proto::kVersion);
  EXPECT_EQ(reply["ok"], false);
  EXPECT_EQ(reply["error"]["code"], proto::err::kMalformed);
}

namespace {
struct CountingEvents : HealthEvents {
  std::uint64_t sweeps = 0;
  void on_task_failure(const proto::TaskExit&, const JobRecord&) override {}
  nlohmann::json health_status() override { return nlohmann::json::object(); }
  nlohmann::json explain(std::uint32_t) override { return nlohmann::json::array(); }
  std::uint64_t check_now() override { return ++sweeps; }
  nlohmann::json events(std::uint32_t limit) override {
    // A node event, and one of job 7 (uid 1000's).
    return nlohmann::json::array({{{"limit", limit}, {"job_id", 0}}, {{"limit", limit}, {"job_id", 7}}});
  }
  std::vector<std::string> admin_done;
  std::expected<nlohmann::json, proto::Error> admin(const AdminRequest& r, const Peer&) override {
    if (const auto* clear = std::get_if<proto::AdminClear>(&r); clear && clear->code == "NOPE")
      return std::unexpected(proto::Error{proto::err::kConflict, "no active fault NOPE"});
    admin_done.push_back(std::visit([](const auto& m) { return proto::to_json(m).dump(); }, r));
    return nlohmann::json{{"message", "done"}};
  }
};
}  // namespace

TEST(RequestHandler, AdminActionsAreForRootOnlyAndPassTheirConflicts) {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  CountingEvents events;
  RequestHandler handler{info, registry, [] {}, &events};
  for (const auto& request : {proto::to_json(proto::AdminDrain{"disk swap"}), proto::to_json(proto::AdminResume{true}),
                              proto::to_json(proto::AdminClear{"KMSG-MCE"})}) {
    auto refused = handler.handle(request.dump(), Peer{4242, 1});
    EXPECT_EQ(refused["error"]["code"], proto::err::kForbidden) << request.dump();
  }
  EXPECT_TRUE(events.admin_done.empty());
  auto drained = handler.handle(proto::to_json(proto::AdminDrain{"disk swap"}).dump(), Peer{0, 1});
  ASSERT_EQ(drained["ok"], true) << drained.dump();
  ASSERT_EQ(events.admin_done.size(), 1u);
  EXPECT_NE(events.admin_done[0].find("disk swap"), std::string::npos);
  auto conflict = handler.handle(proto::to_json(proto::AdminClear{"NOPE"}).dump(), Peer{0, 1});
  EXPECT_EQ(conflict["error"]["code"], proto::err::kConflict);
  // A drain without a reason, or with one past the limit, is a bad field, not an action.
  EXPECT_EQ(handler.handle(R"({"v":1,"type":"admin_drain"})", Peer{0, 1})["error"]["code"], proto::err::kBadField);
  EXPECT_EQ(handler.handle(proto::to_json(proto::AdminDrain{std::string(201, 'x')}).dump(), Peer{0, 1})["error"]["code"],
            proto::err::kBadField);
  EXPECT_EQ(events.admin_done.size(), 1u);
}

TEST(RequestHandler, EventsAreForEveryoneWithABoundedLimit) {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  CountingEvents events;
  RequestHandler handler{info, registry, [] {}, &events};
  auto reply = handler.handle(proto::to_json(proto::EventsQuery{7}).dump(), Peer{4242, 1});
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(reply["data"]["events"][0]["limit"], 7);
  EXPECT_EQ(handler.handle(R"({"v":1,"type":"events"})", Peer{4242, 1})["data"]["events"][0]["limit"], 50);
  EXPECT_EQ(handler.handle(R"({"v":1,"type":"events","limit":0})", Peer{4242, 1})["error"]["code"], proto::err::kBadField);
  // A job's events are for those who may see the job (its timeline is); the node's for everyone.
  EXPECT_EQ(reply["data"]["events"].size(), 1u) << "uid 4242 does not see job 7";
  EXPECT_EQ(handler.handle(proto::to_json(proto::EventsQuery{7}).dump(), Peer{0, 1})["data"]["events"].size(), 2u);
  proto::StepStart start{7, 0, "n1", 1000, true, 0};
  handler.handle(proto::to_json(start).dump(), Peer{0, 1});
  EXPECT_EQ(handler.handle(proto::to_json(proto::EventsQuery{7}).dump(), Peer{1000, 1})["data"]["events"].size(), 2u);
  EXPECT_EQ(handler.handle(R"({"v":1,"type":"events","limit":5000})", Peer{4242, 1})["error"]["code"], proto::err::kBadField);
}

TEST(RequestHandler, AnOnDemandCheckIsForRootAndReturnsTheSweepNumber) {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  CountingEvents events;
  RequestHandler handler{info, registry, [] {}, &events};
  auto refused = handler.handle(line(proto::CheckNow{}), Peer{4242, 1});
  EXPECT_EQ(refused["error"]["code"], proto::err::kForbidden);
  EXPECT_EQ(events.sweeps, 0u);
  auto reply = handler.handle(line(proto::CheckNow{}), Peer{0, 1});
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(reply["data"]["sweep"], 1);
}

// ---- client text in replies and logs -------------------------------------------------------------

namespace {
// A `type` that would write a real-looking second log line, padded to 60 KiB.
std::string forging_request() {
  std::string type = "x\n[2026-12-01 09:00:00.000] [info] job 7 requeued\x1b[2J";
  type += std::string(60 * 1024, 'A');
  return nlohmann::json{{"v", 1}, {"type", type}}.dump();
}
}  // namespace

TEST(RequestHandler, ClientTextIsQuotedAndCutInTheReplyAndTheLog) {
  ar::test::LogCapture log;
  HandlerFixture f;
  auto reply = f.handler.handle(forging_request(), Peer{4242, 1});
  ASSERT_EQ(reply["error"]["code"], proto::err::kUnknownType);
  const auto message = reply["error"]["message"].get<std::string>();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_NE(message.find("'x\\x0a[2026"), std::string::npos) << message;
  EXPECT_LT(message.size(), 400u);
  EXPECT_EQ(log.lines(), 1u) << log.text();
  EXPECT_EQ(log.text().find("\n[2026"), std::string::npos) << log.text();
  EXPECT_LT(log.text().size(), 1000u);
}

TEST(RequestHandler, AFloodOfBadMessagesWritesABoundedLog) {
  ar::test::LogCapture log;
  HandlerFixture f;
  const auto request = forging_request();
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 300; ++i) f.handler.handle(request, Peer{4242, 1});
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count() + 1;
  // At most 10 lines a second (and a line about those left out), each of them short: the 500
  // requests of 60 KiB wrote 30 MB of log before.
  EXPECT_LT(log.lines(), 300u);
  EXPECT_LE(log.lines(), static_cast<std::size_t>(11 * seconds));
  EXPECT_LT(log.text().size(), log.lines() * 600);
  // Once the second is over, the next line says how many were left out.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  f.handler.handle(request, Peer{4242, 1});
  EXPECT_GE(log.count("more refused messages were not logged"), 1u) << log.text();
}

TEST(RequestHandler, QuotingEscapesEveryByteOutsidePrintableAscii) {
  EXPECT_EQ(proto::quote_client_text("a'b\\c\x7f\xff"), "'a\\x27b\\x5cc\\x7f\\xff'");
  EXPECT_EQ(proto::quote_client_text(std::string(70, 'z'), 4), "'zzzz' (66 more bytes)");
}

// ---- who sees which jobs -------------------------------------------------------------------------

namespace {
struct TimelineEvents : CountingEvents {
  nlohmann::json explain(std::uint32_t job_id) override { return nlohmann::json::array({{{"job", job_id}}}); }
};

// Two users' jobs on the node: 10 of uid 1000, 20 of uid 2000; uid 3000 is the Slurm user.
struct TwoUsers {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  TimelineEvents events;
  RequestHandler handler{info, registry, [] {}, &events, uid_t{3000}};
  TwoUsers() {
    handler.handle(line(proto::StepStart{10, 0, "n1", 1000, true, 0}), Peer{0, 1});
    handler.handle(line(proto::StepStart{20, 0, "n1", 2000, true, 0}), Peer{0, 1});
  }
  std::vector<std::uint32_t> jobs_seen_by(uid_t uid) {
    auto reply = handler.handle(line(proto::JobsQuery{}), Peer{uid, 1});
    std::vector<std::uint32_t> ids;
    for (const auto& j : reply["data"]["jobs"]) ids.push_back(j["job_id"]);
    return ids;
  }
  nlohmann::json explain_as(uid_t uid, std::uint32_t job) {
    return handler.handle(line(proto::ExplainQuery{job}), Peer{uid, 1});
  }
};
}  // namespace

TEST(RequestHandler, AUserListsOnlyTheirOwnJobs) {
  TwoUsers t;
  EXPECT_EQ(t.jobs_seen_by(1000), std::vector<std::uint32_t>{10});
  EXPECT_EQ(t.jobs_seen_by(2000), std::vector<std::uint32_t>{20});
  EXPECT_TRUE(t.jobs_seen_by(4242).empty());
}

TEST(RequestHandler, RootAndTheSlurmUserListEveryJob) {
  TwoUsers t;
  EXPECT_EQ(t.jobs_seen_by(0), (std::vector<std::uint32_t>{10, 20}));
  EXPECT_EQ(t.jobs_seen_by(3000), (std::vector<std::uint32_t>{10, 20}));
}

TEST(RequestHandler, ExplainOfSomeoneElsesJobAnswersAsForAnUnknownJob) {
  TwoUsers t;
  auto own = t.explain_as(1000, 10);
  ASSERT_EQ(own["ok"], true);
  EXPECT_EQ(own["data"]["timeline"].size(), 1u);
  auto other = t.explain_as(1000, 20);
  auto unknown = t.explain_as(1000, 99);
  ASSERT_EQ(other["ok"], true);
  EXPECT_TRUE(other["data"]["timeline"].empty());
  EXPECT_EQ(other["data"]["timeline"], unknown["data"]["timeline"]);
  EXPECT_FALSE(other["data"].contains("uid")) << "the owner of someone else's job is not told";
  EXPECT_EQ(own["data"]["uid"], 1000) << "the owner, for healthctl's user name";
  EXPECT_EQ(t.explain_as(0, 20)["data"]["timeline"].size(), 1u);
  EXPECT_EQ(t.explain_as(3000, 20)["data"]["timeline"].size(), 1u);
}

TEST(RequestHandler, StatusCountsOnlyTheJobsThePeerMaySee) {
  TwoUsers t;
  auto user = t.handler.handle(line(proto::StatusQuery{}), Peer{1000, 1});
  EXPECT_EQ(user["data"]["jobs_known"], 1);
  EXPECT_EQ(user["data"]["jobs_running"], 1);
  EXPECT_TRUE(user["data"].contains("health"));  // the node's health is for everyone
  auto stranger = t.handler.handle(line(proto::StatusQuery{}), Peer{4242, 1});
  EXPECT_EQ(stranger["data"]["jobs_known"], 0);
  auto root = t.handler.handle(line(proto::StatusQuery{}), Peer{0, 1});
  EXPECT_EQ(root["data"]["jobs_known"], 2);
}

TEST(RequestHandler, WithoutASlurmUserOnlyRootSeesEveryJob) {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  RequestHandler handler{info, registry, [] {}, nullptr, slurm_user_uid("no-such-user-healthd-test")};
  handler.handle(line(proto::StepStart{10, 0, "n1", 1000, true, 0}), Peer{0, 1});
  auto reply = handler.handle(line(proto::JobsQuery{}), Peer{3000, 1});
  EXPECT_TRUE(reply["data"]["jobs"].empty());
}

TEST(RequestHandler, TheSlurmUserIsLookedUpByName) {
  EXPECT_EQ(slurm_user_uid("root"), uid_t{0});
  EXPECT_EQ(slurm_user_uid(""), std::nullopt);
  EXPECT_EQ(slurm_user_uid("no-such-user-healthd-test"), std::nullopt);
}

namespace {
// The batch script's task of job 10 (uid 1000) on its second attempt, telling the restart count
// slurmstepd could not read from slurmctld.
proto::StepStart correction(std::uint32_t job, std::uint32_t uid, std::uint32_t restart) {
  proto::StepStart m{job, proto::kBatchStep, "n1", uid, true, restart};
  return m;
}
}  // namespace

// A restarted job of an ordinary user: the task runs as the user, so its correction is not root's.
// Refused, healthd kept restart count 0 and never acted on the stall of the restarted job (issue 31).
TEST(RequestHandler, TheJobsOwnerMayRaiseTheRestartCountOfItsRunningStep) {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  RequestHandler handler{info, registry, [] {}};
  proto::StepStart root_start{10, proto::kBatchStep, "n1", 1000, true, 0};
  root_start.heartbeat = proto::Heartbeat{"/fsx/hb", 300, 600};
  ASSERT_EQ(handler.handle(line(root_start), Peer{0, 1})["ok"], true);

  auto forged = correction(10, 1000, 1);
  forged.auto_resume = false;
  forged.heartbeat = proto::Heartbeat{"/root/secret", 300, 600};
  auto reply = handler.handle(line(forged), Peer{1000, 1});
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  const auto& job = registry.jobs().at(10);
  EXPECT_EQ(job.restart_count, 1u);
  ASSERT_TRUE(job.heartbeat);
  EXPECT_EQ(job.heartbeat->path, "/fsx/hb") << "only the count is taken from the user";
  EXPECT_TRUE(job.auto_resume()) << "the step keeps what root said of it";
  EXPECT_TRUE(job.running());
}

TEST(RequestHandler, ARestartCountFromAnyoneButTheOwnerOrForAnotherStepIsRefused) {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  RequestHandler handler{info, registry, [] {}};
  ASSERT_EQ(handler.handle(line(proto::StepStart{10, proto::kBatchStep, "n1", 1000, true, 2}), Peer{0, 1})["ok"], true);
  const auto refused = [&](const proto::StepStart& m, uid_t peer) {
    auto reply = handler.handle(line(m), Peer{peer, 1});
    return reply["ok"] == false && reply["error"]["code"] == proto::err::kForbidden;
  };
  EXPECT_TRUE(refused(correction(10, 2000, 3), 2000)) << "another user's job";
  EXPECT_TRUE(refused(correction(10, 1000, 3), 2000)) << "a uid in the message that is not the peer's";
  EXPECT_TRUE(refused(correction(10, 1000, 1), 1000)) << "never down";
  EXPECT_TRUE(refused(correction(10, 1000, 2), 1000)) << "nothing to correct";
  EXPECT_TRUE(refused(correction(11, 1000, 3), 1000)) << "a job root never announced";
  auto other_step = correction(10, 1000, 3);
  other_step.step_id = 0;
  EXPECT_TRUE(refused(other_step, 1000)) << "a step root never announced";
  EXPECT_EQ(registry.jobs().at(10).restart_count, 2u);
  EXPECT_EQ(handler.handle(line(correction(10, 1000, 3)), Peer{1000, 1})["ok"], true) << "the owner, upwards";
  EXPECT_EQ(registry.jobs().at(10).restart_count, 3u);
  // Only a step start: a task exit or step end from the owner is still refused.
  auto exit = handler.handle(line(proto::TaskExit{10, proto::kBatchStep, "n1", 0, 256}), Peer{1000, 1});
  EXPECT_EQ(exit["error"]["code"], proto::err::kForbidden);
}

namespace {
struct SweepOfJob : CountingEvents {
  nlohmann::json health_status() override {
    return {{"last_sweep", "job 20 step failed"}, {"last_sweep_job", 20}, {"checks", nlohmann::json::array()}};
  }
};
}  // namespace

// `healthctl status` showed every user why the last sweep ran, "job 4242 step failed", while `jobs`
// and `explain` hid other users' jobs (issue 31).
TEST(RequestHandler, StatusNamesTheJobBehindTheLastSweepOnlyToThoseWhoMaySeeIt) {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  SweepOfJob events;
  RequestHandler handler{info, registry, [] {}, &events, uid_t{3000}};
  handler.handle(line(proto::StepStart{20, 0, "n1", 2000, true, 0}), Peer{0, 1});
  const auto health_as = [&](uid_t uid) { return handler.handle(line(proto::StatusQuery{}), Peer{uid, 1})["data"]["health"]; };
  for (uid_t stranger : {uid_t{1000}, uid_t{4242}}) {
    auto h = health_as(stranger);
    EXPECT_EQ(h["last_sweep"], "a step of another user's job failed");
    EXPECT_FALSE(h.contains("last_sweep_job"));
    EXPECT_EQ(h.dump().find("20"), std::string::npos) << h.dump();
  }
  for (uid_t allowed : {uid_t{0}, uid_t{2000}, uid_t{3000}}) {
    auto h = health_as(allowed);
    EXPECT_EQ(h["last_sweep"], "job 20 step failed");
    EXPECT_EQ(h["last_sweep_job"], 20);
  }
}
