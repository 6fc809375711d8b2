// The EC2 notice check: parsing IMDS documents, the judgement, and the real IMDSv2 client and check
// against the fake metadata server (token required, scenario from files).
#include <gtest/gtest.h>

#include "checks/ec2/ec2_check.hpp"
#include "checks/registry.hpp"
#include "checks/ec2/ec2_config.hpp"
#include "config/config.hpp"
#include "fake_imds.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
const char* kReboot = R"([{"NotBefore":"21 Jan 2027 09:00:43 GMT","Code":"system-reboot",
  "Description":"scheduled reboot","EventId":"instance-event-0d59937288b749b32","State":"active"}])";
const char* kDone = R"([{"Code":"system-reboot","Description":"[Completed] scheduled reboot","State":"completed"},
  {"Code":"instance-retirement","Description":"[Canceled] retirement","State":"canceled"}])";
}  // namespace

TEST(Ec2Parse, OnlyActiveEventsThatTakeTheInstanceAwayCount) {
  auto n = parse_maintenance_events(kReboot);
  ASSERT_TRUE(n) << n.error();
  ASSERT_EQ(n->size(), 1u);
  EXPECT_EQ((*n)[0].code, "EC2-SYSTEM-REBOOT");
  EXPECT_EQ((*n)[0].message, "ec2: system-reboot scheduled: scheduled reboot (not before 21 Jan 2027 09:00:43 GMT)");
  EXPECT_TRUE(parse_maintenance_events(kDone)->empty());
  EXPECT_TRUE(parse_maintenance_events("[]")->empty());
  EXPECT_EQ((*parse_maintenance_events(R"([{"Code":"instance-retirement","State":"active"}])"))[0].code,
            "EC2-INSTANCE-RETIREMENT");
  EXPECT_FALSE(parse_maintenance_events("{not json"));
}

TEST(Ec2Parse, SpotInstanceAction) {
  auto n = parse_spot_action(R"({"action": "terminate", "time": "2027-01-05T18:02:00Z"})");
  ASSERT_TRUE(n) << n.error();
  EXPECT_EQ(n->code, "EC2-SPOT-TERMINATE");
  EXPECT_EQ(n->message, "ec2: spot instance-action terminate at 2027-01-05T18:02:00Z");
  EXPECT_FALSE(parse_spot_action(R"({"time": "x"})"));
}

TEST(Ec2Judge, ANoticeIsAFaultThatAsksForACheckpointFirst) {
  Ec2Config c;
  c.checkpoint_signal = "USR2";
  c.checkpoint_grace = 90s;
  auto r = judge_ec2_notices(c, "spot", {{"EC2-SPOT-TERMINATE", "ec2: spot instance-action terminate"}});
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.action, Remedy::drain);
  ASSERT_TRUE(r.checkpoint_first);
  EXPECT_EQ(r.checkpoint_first->signal, "USR2");
  EXPECT_EQ(r.checkpoint_first->grace, 90s);
  EXPECT_EQ(judge_ec2_notices(c, "spot", {}).status, Status::ok);
  c.action = Remedy::warn;
  r = judge_ec2_notices(c, "spot", {{"EC2-SPOT-STOP", "x"}});
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_FALSE(r.checkpoint_first);
}

TEST(Ec2Check, AgainstTheFakeImds) {
  ar::test::FakeImds imds;
  ASSERT_NE(imds.port(), 0) << "the fake IMDS did not start";
  Ec2Config c;
  c.enabled = true;
  c.endpoint = imds.endpoint();
  Ec2Check check(c);

  imds.put("events/maintenance/scheduled", "[]");
  auto r = check.run();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, Status::ok) << r[0].message;
  EXPECT_EQ(r[1].status, Status::ok) << r[1].message;  // spot: 404, nothing coming

  imds.put("events/maintenance/scheduled", kReboot);
  r = check.run();
  EXPECT_EQ(r[0].status, Status::fault);
  EXPECT_EQ(r[0].code, "EC2-SYSTEM-REBOOT");
  EXPECT_TRUE(r[0].checkpoint_first);

  imds.put("events/maintenance/scheduled", kDone);
  imds.put("spot/instance-action", R"({"action":"terminate","time":"2027-01-05T18:02:00Z"})");
  r = check.run();
  EXPECT_EQ(r[0].status, Status::ok);
  EXPECT_EQ(r[1].code, "EC2-SPOT-TERMINATE");

  imds.put("spot/instance-action", "<html>not json</html>");
  r = check.run();
  EXPECT_EQ(r[1].status, Status::error);
  EXPECT_EQ(r[1].code, "EC2-IMDS-BAD-ANSWER");
}

TEST(Ec2Check, ImdsNotAnsweringIsABrokenCheckNeverAFault) {
  ar::test::FakeImds imds;
  ASSERT_NE(imds.port(), 0);
  Ec2Config c;
  c.endpoint = imds.endpoint();
  c.timeout = 300ms;
  imds.put(".down", "");  // answers 503 to everything
  auto r = Ec2Check(c).run();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, Status::error);
  EXPECT_EQ(r[0].code, "EC2-IMDS-UNREACHABLE");
  EXPECT_NE(r[0].message.find("HTTP 503"), std::string::npos) << r[0].message;

  c.endpoint = "http://127.0.0.1:1";  // nothing listens there
  auto start = std::chrono::steady_clock::now();
  r = Ec2Check(c).run();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(r[0].status, Status::error);
  EXPECT_NE(r[0].message.find("ec2: instance metadata not readable"), std::string::npos) << r[0].message;
}

TEST(Ec2Imds, TheTokenIsRequiredAndTheInstanceTypeIsRead) {
  ar::test::FakeImds imds;
  ASSERT_NE(imds.port(), 0);
  imds.put("instance-type", "p5.48xlarge\n");
  auto t = fetch_instance_type(imds.endpoint());
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(*t, "p5.48xlarge");
  ImdsClient client(imds.endpoint(), 1s);
  auto missing = client.get("/latest/meta-data/spot/instance-action");
  ASSERT_TRUE(missing) << missing.error();
  EXPECT_FALSE(*missing);
}

TEST(Ec2Config, KeysAreReadAndCheckedStrictly) {
  auto c = parse_config(R"(
[checks.ec2]
enabled = true
endpoint = "http://127.0.0.1:8080/"
interval_s = 10
timeout_ms = 500
checkpoint_signal = "USR2"
checkpoint_grace_s = 120
action = "reboot"
)", "h.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_TRUE(c->section<Ec2Config>().enabled);
  EXPECT_EQ(c->section<Ec2Config>().endpoint, "http://127.0.0.1:8080");
  EXPECT_EQ(c->section<Ec2Config>().interval, 10s);
  EXPECT_EQ(c->section<Ec2Config>().timeout, 500ms);
  EXPECT_EQ(c->section<Ec2Config>().checkpoint_signal, "USR2");
  EXPECT_EQ(c->section<Ec2Config>().checkpoint_grace, 120s);
  EXPECT_EQ(c->section<Ec2Config>().action, Remedy::reboot);
  auto bad = parse_config("[checks.ec2]\ncheckpoint_signal = \"KILL\"\n", "h.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("h.toml:2:"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("'checkpoint_signal' in [checks.ec2] must be one of USR1"), std::string::npos) << bad.error();
  EXPECT_FALSE(parse_config("[checks.ec2]\nendpoint = \"169.254.169.254\"\n", "h.toml"));
  EXPECT_FALSE(parse_config("[checks.ec2]\nenabled = 1\n", "h.toml"));
}
