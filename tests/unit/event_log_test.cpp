// The node's event log behind `healthctl events`: newest first, bounded, kept across a restart, and a
// hostile or broken file costs only what is wrong in it.
#include <fstream>

#include <gtest/gtest.h>

#include "state/event_log.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;

namespace {
Notice notice(NoticeKind kind, std::uint32_t job, std::int64_t at_s) {
  Notice n;
  n.kind = kind;
  n.at = std::chrono::system_clock::time_point(std::chrono::seconds(at_s));
  n.node = "n1";
  n.job_id = job;
  n.uid = 1000;
  n.code = "GPU-XID-79";
  n.message = "fallen off the bus";
  n.action = "drain";
  return n;
}
}  // namespace

TEST(EventLog, NewestFirstBoundedAndKeptAcrossARestart) {
  ar::test::TempDir dir;
  {
    EventLog log(dir / "events.json", 3);
    for (std::uint32_t i = 1; i <= 5; ++i) log.notify(notice(NoticeKind::requeue, i, 1'800'000'000 + i));
    auto events = log.events(10);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0]["job_id"], 5);
    EXPECT_EQ(events[2]["job_id"], 3);
    EXPECT_EQ(log.events(1).size(), 1u);
    log.flush();
  }
  EventLog again(dir / "events.json", 3);
  ASSERT_TRUE(again.load());
  auto events = again.events(10);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["job_id"], 5);
  EXPECT_EQ(events[0]["kind"], "requeue");
  EXPECT_EQ(events[0]["uid"], 1000);
  EXPECT_EQ(events[0]["at_ms"], (1'800'000'000LL + 5) * 1000);
}

TEST(EventLog, AnUnreadableEventIsDroppedAloneAndABrokenFileIsAnError) {
  ar::test::TempDir dir;
  {
    std::ofstream(dir / "events.json")
        << R"({"version":1,"events":[{"kind":"no-such-kind","at_ms":1,"node":"n1","job_id":0,"attempt":0,"code":"","message":"","action":""},)"
        << R"({"kind":"drain","at_ms":1800000000000,"node":"n1\u0007\nforged","job_id":0,"attempt":0,"code":"X","message":"m","action":"drain","uid":null}]})";
  }
  EventLog log(dir / "events.json");
  ASSERT_TRUE(log.load());
  auto events = log.events(10);
  ASSERT_EQ(events.size(), 1u);
  const std::string node = events[0]["node"];
  EXPECT_EQ(node.find('\n'), std::string::npos) << "a line break from the file never reaches a reader";
  { std::ofstream(dir / "broken.json") << "{not json"; }
  EventLog broken(dir / "broken.json");
  EXPECT_FALSE(broken.load());
}
