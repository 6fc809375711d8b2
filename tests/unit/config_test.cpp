#include <fstream>

#include <gtest/gtest.h>

#include "config/config.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;

TEST(Config, EmptyFileGivesDefaults) {
  auto c = parse_config("# nothing\n", "healthd.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->socket, "/run/healthd/healthd.sock");
  EXPECT_EQ(c->state_dir, "/var/lib/healthd");
  EXPECT_EQ(c->log_level, "info");
  EXPECT_EQ(c->node_name, default_node_name());
}

TEST(Config, ReadsEveryKey) {
  auto c = parse_config(R"(
# comments are allowed
[daemon]
node_name = "n7"   # trailing comment
socket = "/tmp/s.sock"
state_dir = "/tmp/state"
log_level = "debug"
ended_job_retention_s = 60
)",
                        "x.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->node_name, "n7");
  EXPECT_EQ(c->socket, "/tmp/s.sock");
  EXPECT_EQ(c->state_dir, "/tmp/state");
  EXPECT_EQ(c->log_level, "debug");
  EXPECT_EQ(c->ended_job_retention.count(), 60);
}

TEST(Config, UnknownKeyNamesFileLineAndKey) {
  auto c = parse_config("[daemon]\nnode_name = \"a\"\nsockett = \"/x\"\n", "/etc/healthd/healthd.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("/etc/healthd/healthd.toml:3:"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("'sockett'"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("[daemon]"), std::string::npos) << c.error();
}

TEST(Config, UnknownSectionIsNamed) {
  auto c = parse_config("[deamon]\n", "f.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("f.toml:1:"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("[deamon]"), std::string::npos) << c.error();
}

TEST(Config, WrongTypeNamesKeyAndLine) {
  auto c = parse_config("[daemon]\n\nended_job_retention_s = \"an hour\"\n", "f.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("f.toml:3:"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("ended_job_retention_s"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("integer"), std::string::npos) << c.error();
}

TEST(Config, BadValuesAreRefused) {
  EXPECT_FALSE(parse_config("[daemon]\nsocket = \"relative.sock\"\n", "f"));
  EXPECT_FALSE(parse_config("[daemon]\nlog_level = \"loud\"\n", "f"));
  EXPECT_FALSE(parse_config("[daemon]\nended_job_retention_s = -5\n", "f"));
  EXPECT_FALSE(parse_config("daemon = 3\n", "f"));
}

TEST(Config, SyntaxErrorHasPosition) {
  auto c = parse_config("[daemon]\nsocket = \n", "f.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("f.toml:2:"), std::string::npos) << c.error();
}

TEST(Config, LoadNamesMissingFile) {
  ar::test::TempDir dir;
  auto c = load_config(dir / "missing.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("missing.toml"), std::string::npos);
  std::ofstream(dir / "ok.toml") << "[daemon]\nnode_name = \"z\"\n";
  auto ok = load_config(dir / "ok.toml");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->node_name, "z");
}

TEST(Config, GpuSectionAndXidOverrides) {
  auto c = parse_config(R"(
[checks.gpu]
library = "/opt/nvidia/libnvidia-ml.so.1"
deadline_ms = 2000
expected_count = 8
required = true
pcie_width_action = "warn"
nvlink_expected_links = 18
temperature_max_c = 88
xid_hold_s = 120
xid_unknown_action = "warn"

[[checks.gpu.xid]]
xid = 92
action = "drain"
count = 3
window_s = 600

[[checks.gpu.xid]]
xid = 79
action = "drain"
)",
                        "g.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->gpu.library, "/opt/nvidia/libnvidia-ml.so.1");
  EXPECT_EQ(c->gpu.deadline.count(), 2000);
  EXPECT_EQ(c->gpu.thresholds.expected_count, 8u);
  EXPECT_TRUE(c->gpu.thresholds.required);
  EXPECT_EQ(c->gpu.thresholds.pcie_width_action, Action::warn);
  EXPECT_EQ(c->gpu.thresholds.nvlink_expected_links, 18u);
  EXPECT_EQ(c->gpu.thresholds.temperature_max_c, 88u);
  EXPECT_EQ(c->gpu.xid_hold.count(), 120);
  EXPECT_EQ(c->gpu.xid_unknown, XidAction::warn);
  ASSERT_EQ(c->gpu.xid_rules.size(), 2u);
  EXPECT_EQ(c->gpu.xid_rules.at(92).count, 3u);
  EXPECT_EQ(c->gpu.xid_rules.at(92).window.count(), 600);
  EXPECT_EQ(c->gpu.xid_rules.at(79).action, XidAction::drain);
  EXPECT_EQ(c->gpu.xid_rules.at(79).description, "GPU has fallen off the bus");  // kept from the table
}

TEST(Config, BadXidRulesAreNamed) {
  auto c = parse_config("[checks.gpu]\n[[checks.gpu.xid]]\nxid = 48\naction = \"explode\"\n", "x.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("x.toml:4:"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("reset_gpu"), std::string::npos) << c.error();
  c = parse_config("[[checks.gpu.xid]]\nxid = 48\naction = \"drain\"\ncount = 2\n", "x.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("window_s"), std::string::npos) << c.error();
  c = parse_config("[[checks.gpu.xid]]\naction = \"drain\"\n", "x.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("needs xid and action"), std::string::npos) << c.error();
  c = parse_config("[checks.gpu]\nmemory_action = \"nuke\"\n", "x.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("memory_action"), std::string::npos) << c.error();
}
