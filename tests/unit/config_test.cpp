#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "config/config.hpp"
#include "checks/registry.hpp"
#include "checks/gpu/gpu_config.hpp"
#include "checks/script/script_config.hpp"
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
  // An absolute scontrol is taken as it is: the test needs no Slurm installed.
  std::ofstream(dir / "ok.toml") << "[daemon]\nnode_name = \"z\"\n[slurm]\nscontrol = \"/opt/slurm/bin/scontrol\"\n";
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
  EXPECT_EQ(c->section<GpuConfig>().library, "/opt/nvidia/libnvidia-ml.so.1");
  EXPECT_EQ(c->section<GpuConfig>().deadline.count(), 2000);
  EXPECT_EQ(c->section<GpuConfig>().thresholds.expected_count, 8u);
  EXPECT_TRUE(c->section<GpuConfig>().thresholds.required);
  EXPECT_EQ(c->section<GpuConfig>().thresholds.pcie_width_action, Remedy::warn);
  EXPECT_EQ(c->section<GpuConfig>().thresholds.nvlink_expected_links, 18u);
  EXPECT_EQ(c->section<GpuConfig>().thresholds.temperature_max_c, 88u);
  EXPECT_EQ(c->section<GpuConfig>().xid_hold.count(), 120);
  EXPECT_EQ(c->section<GpuConfig>().xid_unknown, Remedy::warn);
  ASSERT_EQ(c->section<GpuConfig>().xid_rules.size(), 2u);
  EXPECT_EQ(c->section<GpuConfig>().xid_rules.at(92).count, 3u);
  EXPECT_EQ(c->section<GpuConfig>().xid_rules.at(92).window.count(), 600);
  EXPECT_EQ(c->section<GpuConfig>().xid_rules.at(79).action, Remedy::drain);
  EXPECT_EQ(c->section<GpuConfig>().xid_rules.at(79).description, "GPU has fallen off the bus");  // kept from the table
}

TEST(Config, BadXidRulesAreNamed) {
  auto c = parse_config("[checks.gpu]\n[[checks.gpu.xid]]\nxid = 48\naction = \"explode\"\n", "x.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("x.toml:4:"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("must be one of ignore, warn, notify_only, restart_app, reset_gpu, drain, reboot"),
            std::string::npos) << c.error();
  c = parse_config("[[checks.gpu.xid]]\nxid = 74\naction = \"notify_only\"\n", "x.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->section<GpuConfig>().xid_rules.at(74).action, Remedy::notify_only);
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

namespace {
// The error of a config that must be refused ("" if it was accepted).
std::string refusal(const std::string& text) {
  auto c = parse_config(text, "r.toml");
  return c ? std::string() : c.error();
}

std::expected<Config, std::string> load_text(const ar::test::TempDir& dir, const std::string& text) {
  std::ofstream(dir / "healthd.toml") << text;
  return load_config(dir / "healthd.toml");
}
}  // namespace

TEST(ConfigRefusals, NanAndInfinityAreNotNumbersInRange) {
  // nan compares false with everything: "v < 0 || v > 1" let it through and disabled the drain cap.
  for (const char* v : {"nan", "+nan", "-nan", "inf", "-inf", "1.5", "-0.1"}) {
    auto e = refusal(std::string("[policy]\nmax_drained_share = ") + v + "\n");
    EXPECT_NE(e.find("r.toml:2:"), std::string::npos) << v << ": " << e;
    EXPECT_NE(e.find("max_drained_share"), std::string::npos) << v << ": " << e;
  }
  for (const char* key : {"min_memory_gib", "memory_slack_pct", "min_shm_gib"})
    for (const char* v : {"nan", "inf", "-inf"})
      EXPECT_NE(refusal(std::string("[checks.node]\n") + key + " = " + v + "\n").find(key), std::string::npos) << key << v;
  for (const char* key : {"min_free_gib", "min_free_percent", "min_free_inodes_percent"})
    for (const char* v : {"nan", "inf"})
      EXPECT_NE(refusal(std::string("[[checks.storage.mount]]\npath = \"/fsx\"\n") + key + " = " + v + "\n").find(key),
                std::string::npos)
          << key << v;
  EXPECT_EQ(refusal("[policy]\nmax_drained_share = 0.25\n[checks.node]\nmin_memory_gib = 8\n"), "");
  EXPECT_NE(refusal("[checks.node]\nmemory_slack_pct = 60\n").find("between 0 and 50"), std::string::npos);
}

TEST(ConfigRefusals, EmptyStringsAreNotDefaults) {
  EXPECT_NE(refusal("[slurm]\nscontrol = \"\"\n").find("r.toml:2:12: key 'scontrol' in [slurm] must not be empty"),
            std::string::npos)
      << refusal("[slurm]\nscontrol = \"\"\n");
  EXPECT_NE(refusal("[checks.gpu]\nlibrary = \"\"\n").find("key 'library'"), std::string::npos);
  EXPECT_NE(refusal("[checks.dcgm]\ndcgmi = \"\"\n").find("key 'dcgmi'"), std::string::npos);
  EXPECT_NE(refusal("[daemon]\nnode_name = \"\"\n").find("key 'node_name' in [daemon] must not be empty"),
            std::string::npos);
  EXPECT_NE(refusal("[[checks.script]]\nname = \"x\"\ncommand = [\"\"]\n").find("command"), std::string::npos);
}

TEST(ConfigRefusals, NulBytesAreRefused) {
  EXPECT_NE(refusal("[checks.gpu]\nlibrary = \"lib\\u0000x.so\"\n").find("NUL"), std::string::npos);
  EXPECT_NE(refusal("[slurm]\nscontrol = \"/usr/bin/scontrol\\u0000x\"\n").find("NUL"), std::string::npos);
  EXPECT_NE(refusal("[[checks.script]]\nname = \"x\"\ncommand = [\"/bin/sh\", \"a\\u0000b\"]\n").find("NUL"),
            std::string::npos);
}

TEST(ConfigRefusals, NodeNamesThatCannotBePathsOrSlurmNames) {
  for (const char* bad : {"a\\u0000b", "n\\u001b[31m", "n\\u007f", "../etc", "a/b", "..", ".", "a b", "n\\t1"}) {
    auto e = refusal(std::string("[daemon]\nnode_name = \"") + bad + "\"\n");
    EXPECT_NE(e.find("r.toml:2:13: key 'node_name'"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_EQ(refusal("[daemon]\nnode_name = \"gpu-st-p5-12\"\n"), "");
  EXPECT_TRUE(check_node_name("n1"));
  EXPECT_FALSE(check_node_name(std::string("n\0x", 3)));
  EXPECT_FALSE(check_node_name(std::string(256, 'n')));
}

TEST(ConfigRefusals, ProgramsAreAbsoluteOrBareNames) {
  EXPECT_NE(refusal("[slurm]\nscontrol = \"bin/scontrol\"\n").find("absolute path or a program name"), std::string::npos);
  EXPECT_NE(refusal("[checks.dcgm]\ndcgmi = \"./dcgmi\"\n").find("absolute path or a program name"), std::string::npos);
  EXPECT_NE(refusal("[[checks.script]]\nname = \"x\"\ncommand = [\"scripts/check.sh\"]\n").find("first word"),
            std::string::npos);
  EXPECT_EQ(refusal("[slurm]\nscontrol = \"/opt/slurm/bin/scontrol\"\n"), "");
}

TEST(ConfigRefusals, LoadResolvesProgramNamesInTheFixedPathOnce) {
  ar::test::TempDir dir;
  auto c = load_text(dir, "[slurm]\nscontrol = \"sh\"\n[[checks.script]]\nname = \"ib\"\ncommand = [\"sh\", \"-c\", \"exit 0\"]\n");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->slurm.scontrol.front(), '/');
  EXPECT_TRUE(std::filesystem::equivalent(c->slurm.scontrol, "/bin/sh")) << c->slurm.scontrol;
  EXPECT_EQ(c->section<ScriptsConfig>().scripts.at(0).command.at(0), c->slurm.scontrol);
  EXPECT_EQ(c->section<ScriptsConfig>().scripts.at(0).command.at(1), "-c");

  auto file = (dir / "healthd.toml").string();
  c = load_text(dir, "[daemon]\nnode_name = \"n1\"\n[slurm]\nscontrol = \"ar-no-such-scontrol\"\n");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find(file + ":4:12: key 'scontrol' in [slurm]: ar-no-such-scontrol: not found in /usr/sbin:/usr/bin:/sbin:/bin"),
            std::string::npos)
      << c.error();

  c = load_text(dir, "[[checks.script]]\nname = \"ib\"\ncommand = [\"ar-no-such-check\"]\n");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find(file + ":3:11: [[checks.script]] 'ib' command: ar-no-such-check: not found"), std::string::npos)
      << c.error();

  // dcgmi only matters when the DCGM check is on.
  EXPECT_TRUE(load_text(dir, "[slurm]\nscontrol = \"sh\"\n[checks.dcgm]\ndcgmi = \"ar-no-such-dcgmi\"\n"));
  c = load_text(dir, "[slurm]\nscontrol = \"sh\"\n[checks.dcgm]\nenabled = true\ndcgmi = \"ar-no-such-dcgmi\"\n");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find(file + ":5:9: key 'dcgmi' in [checks.dcgm]"), std::string::npos) << c.error();
}

TEST(ConfigRefusals, ChildEnvironmentNames) {
  auto c = parse_config("[daemon]\nchild_env = [\"SLURM_CLUSTERS\", \"HTTPS_PROXY\"]\n", "r.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->child_env, (std::vector<std::string>{"SLURM_CLUSTERS", "HTTPS_PROXY"}));
  EXPECT_NE(refusal("[daemon]\nchild_env = [\"A=B\"]\n").find("r.toml:2:13: key 'child_env'"), std::string::npos);
  EXPECT_NE(refusal("[daemon]\nchild_env = [\"PATH\"]\n").find("fixed value"), std::string::npos);
  EXPECT_NE(refusal("[daemon]\nchild_env = \"SLURM_CONF\"\n").find("array"), std::string::npos);
}

TEST(ConfigRefusals, KernelLogRuleErrorsHaveAPosition) {
  auto e = refusal("[checks.kernel_log]\n\nrule = 3\n");
  EXPECT_EQ(e.rfind("r.toml:3:8: key 'rule' in [checks.kernel_log] must be an array of tables", 0), 0u) << e;
  e = refusal("[checks.kernel_log]\nrule = [1, 2]\n");
  EXPECT_EQ(e.rfind("r.toml:2:", 0), 0u) << e;
}

TEST(ConfigRefusals, UnknownProfileHasAPosition) {
  ar::test::TempDir dir;
  auto file = (dir / "healthd.toml").string();
  auto c = load_text(dir, "[slurm]\nscontrol = \"sh\"\n[daemon]\ninstance_type = \"p9.mega\"\nprofile_dir = \"" +
                              (dir / "profiles").string() + "\"\n");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind(file + ":4:17: key 'instance_type' in [daemon] unknown instance type 'p9.mega'", 0), 0u)
      << c.error();
  // A bad admin profile file names its own position.
  std::filesystem::create_directories(dir / "profiles");
  std::ofstream(dir / "profiles" / "ours.toml") << "[profile.\"p9.mega\"]\nmemory_gib = nan\n";
  c = load_text(dir, "[slurm]\nscontrol = \"sh\"\n[daemon]\ninstance_type = \"p9.mega\"\nprofile_dir = \"" +
                         (dir / "profiles").string() + "\"\n");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind((dir / "profiles" / "ours.toml").string() + ":2:1: key 'memory_gib'", 0), 0u) << c.error();
  EXPECT_TRUE(load_text(dir, "[slurm]\nscontrol = \"sh\"\n[daemon]\ninstance_type = \"p5.48xlarge\"\n"));
  EXPECT_TRUE(load_text(dir, "[slurm]\nscontrol = \"sh\"\n[daemon]\ninstance_type = \"auto\"\n"));
}
