#include <gtest/gtest.h>

#include "server/request_handler.hpp"

using namespace ar::healthd;
namespace proto = ar::proto;

namespace {
struct Fixture {
  JobRegistry registry{"/nonexistent/jobs.json"};
  DaemonInfo info{"n1", "1.2.3", "/s", "/d", "/c", WallClock::now()};
  int changes = 0;
  RequestHandler handler{info, registry, [this] { ++changes; }};
};
std::string line(const proto::Request& r) { return proto::to_json(r).dump(); }
}  // namespace

TEST(RequestHandler, LifecycleFromRootChangesTheRegistry) {
  Fixture f;
  auto reply = f.handler.handle(line(proto::StepStart{4, 0, "n1", 1000, true, 0}), Peer{0, 1});
  EXPECT_EQ(reply["ok"], true);
  EXPECT_EQ(f.changes, 1);
  EXPECT_EQ(f.registry.jobs().count(4), 1u);
}

TEST(RequestHandler, LifecycleFromAUserIsForbidden) {
  Fixture f;
  auto reply = f.handler.handle(line(proto::TaskExit{4, 0, "n1", 0, 256}), Peer{4242, 1});
  EXPECT_EQ(reply["ok"], false);
  EXPECT_EQ(reply["error"]["code"], proto::err::kForbidden);
  EXPECT_EQ(f.changes, 0);
  EXPECT_TRUE(f.registry.jobs().empty());
}

TEST(RequestHandler, QueriesAreOpenToUsers) {
  Fixture f;
  auto status = f.handler.handle(line(proto::StatusQuery{}), Peer{4242, 1});
  ASSERT_EQ(status["ok"], true);
  EXPECT_EQ(status["data"]["node"], "n1");
  EXPECT_EQ(status["data"]["version"], "1.2.3");
  auto jobs = f.handler.handle(line(proto::JobsQuery{}), Peer{4242, 1});
  ASSERT_EQ(jobs["ok"], true);
  EXPECT_TRUE(jobs["data"]["jobs"].empty());
}

TEST(RequestHandler, ErrorRepliesCarryVersionAndCode) {
  Fixture f;
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
};
}  // namespace

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
