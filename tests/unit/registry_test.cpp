// The check registry and the daemon's composition: the checks a config file asks for are built from
// the registry alone (as the daemon and a config-check mode build them), without starting anything,
// and the one cross-check wiring (kernel-log XID lines to the XID check) is the GPU factory's.
#include <algorithm>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "checks/registry.hpp"
#include "config/fields.hpp"
#include "daemon.hpp"
#include <sstream>
#include "temp_dir.hpp"

using namespace ar::healthd;

namespace {

std::vector<std::string> names(const std::vector<std::shared_ptr<Check>>& checks) {
  std::vector<std::string> out;
  for (const auto& c : checks) out.push_back(c->name());
  return out;
}

struct HostFixture {
  ar::test::TempDir dir;
  std::filesystem::path log = dir / "var/log/kern.log";
  std::filesystem::path file = dir / "healthd.toml";

  explicit HostFixture(const std::string& extra = "") {
    std::filesystem::create_directories(log.parent_path());
    std::ofstream(log) << "boot\n";
    std::ofstream(file) << "[daemon]\nhost_root = \"" << dir.path().string() << "\"\nstate_dir = \""
                        << (dir / "state").string() << "\"\n[checks.kernel_log]\npath = \"/var/log/kern.log\"\n"
                        << "[checks.gpu]\nlibrary = \"/nonexistent/libnvidia-ml.so.1\"\nevents = false\n"
                        << extra;
    std::filesystem::create_directories(dir / "state");
  }
  std::vector<std::shared_ptr<Check>> build() const {
    auto config = load_config(file);
    EXPECT_TRUE(config) << config.error();
    BuildContext context{config->node_name, config->host_root, config->state_dir};
    return build_checks(*config, context);
  }
};

}  // namespace

TEST(Registry, EverySectionHasOneOwnerAndDefaults) {
  std::set<std::string> seen;
  for (const auto& kind : check_kinds()) {
    EXPECT_TRUE(seen.insert(kind.section.name).second) << kind.section.name << " registered twice";
    auto defaults = kind.section.read(nullptr, "none.toml");
    ASSERT_TRUE(defaults) << kind.section.name << ": " << defaults.error();
  }
  auto empty = parse_config("", "empty.toml");
  ASSERT_TRUE(empty) << empty.error();
  for (const auto& kind : check_kinds()) EXPECT_NE(empty->checks.find(kind.section.name), nullptr) << kind.section.name;
}

TEST(Registry, BuildsTheChecksAConfigFileAsksForInOrderWithoutStartingThem) {
  HostFixture host("[checks.dcgm]\nenabled = false\n[[checks.script]]\nname = \"ib\"\ncommand = [\"/bin/true\"]\n"
                   "[[checks.storage.mount]]\npath = \"/\"\nprobe = false\n");
  auto checks = host.build();
  auto got = names(checks);
  // Disabled and unconfigured checks are not built; the GPU snapshot comes before the XID check.
  for (const char* expected : {"kernel_log", "gpu", "gpu_xid", "efa", "neuron", "node", "edac", "storage", "script:ib"})
    EXPECT_NE(std::find(got.begin(), got.end(), expected), got.end()) << expected;
  EXPECT_EQ(std::find(got.begin(), got.end(), "gpu.dcgm"), got.end());
  EXPECT_EQ(std::find(got.begin(), got.end(), "ec2"), got.end());
  auto at = [&](const std::string& n) { return std::find(got.begin(), got.end(), n) - got.begin(); };
  EXPECT_LT(at("kernel_log"), at("gpu"));
  EXPECT_LT(at("gpu"), at("gpu_xid"));
  EXPECT_EQ(got.back(), "script:ib");
}

TEST(Registry, DisabledChecksAreNotBuilt) {
  HostFixture host("[checks.efa]\nenabled = false\n[checks.neuron]\nenabled = false\n");
  auto got = names(host.build());
  EXPECT_EQ(std::find(got.begin(), got.end(), "efa"), got.end());
  EXPECT_EQ(std::find(got.begin(), got.end(), "neuron"), got.end());
  EXPECT_NE(std::find(got.begin(), got.end(), "node"), got.end());
}

// The XID check takes its kernel-log lines through the tap its factory adds: built from the
// registry, with no watcher thread started, a line read by the kernel-log check reaches it.
TEST(Registry, AnXidLineInTheKernelLogReachesTheXidCheckThroughTheGpuFactorysTap) {
  HostFixture host;
  auto checks = host.build();
  auto find = [&](const std::string& n) {
    auto it = std::find_if(checks.begin(), checks.end(), [&](const auto& c) { return c->name() == n; });
    EXPECT_NE(it, checks.end()) << n;
    return *it;
  };
  auto kernel_log = find("kernel_log");
  auto xids = find("gpu_xid");
  kernel_log->run();  // the reader starts at the end of the log
  std::ofstream(host.log, std::ios::app) << "<4>NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n";
  auto kl = kernel_log->run();
  ASSERT_EQ(kl.size(), 1u);
  EXPECT_EQ(kl[0].status, Status::ok) << kl[0].message;  // the XID line is the XID check's, not a rule's
  auto x = xids->run();
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].status, Status::fault) << x[0].message;
  EXPECT_EQ(x[0].code, "GPU-XID-79");
}

TEST(Registry, WithTheGpuChecksOffNoOneTapsTheKernelLog) {
  HostFixture host("");
  std::ofstream(host.file, std::ios::app) << "";
  // [checks.gpu] enabled = false: written as its own file, the key would clash with the fixture's table.
  std::ofstream(host.file) << "[daemon]\nhost_root = \"" << host.dir.path().string() << "\"\nstate_dir = \""
                           << (host.dir / "state").string() << "\"\n[checks.kernel_log]\npath = \"/var/log/kern.log\"\n"
                           << "[checks.gpu]\nenabled = false\n";
  auto checks = host.build();
  auto got = names(checks);
  EXPECT_EQ(std::find(got.begin(), got.end(), "gpu_xid"), got.end());
  auto kernel_log = checks.front();
  ASSERT_EQ(kernel_log->name(), "kernel_log");
  kernel_log->run();
  std::ofstream(host.log, std::ios::app) << "<4>NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n";
  // No XID check: the line is nobody's, and the built-in rules leave XIDs to the XID check.
  EXPECT_EQ(kernel_log->run()[0].status, Status::ok);
}

TEST(ConfigErrors, AnUnknownSectionOrKeySaysWhatWasMeant) {
  auto key = parse_config("[checks.efa]\ncounter_windw_s = 5\n", "f.toml");
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().rfind("f.toml:2:1: unknown key 'counter_windw_s' in [checks.efa]; did you mean 'counter_window_s'?", 0), 0u)
      << key.error();
  auto check = parse_config("[checks.neuronn]\nenabled = true\n", "f.toml");
  ASSERT_FALSE(check);
  EXPECT_NE(check.error().find("f.toml:1:"), std::string::npos) << check.error();
  EXPECT_NE(check.error().find("unknown section [checks.neuronn]; did you mean 'neuron'?"), std::string::npos) << check.error();
  auto section = parse_config("[deamon]\nnode_name = \"x\"\n", "f.toml");
  ASSERT_FALSE(section);
  EXPECT_NE(section.error().find("did you mean 'daemon'?"), std::string::npos) << section.error();
  auto far = parse_config("[daemon]\nzzzzzz = 1\n", "f.toml");
  ASSERT_FALSE(far);
  EXPECT_EQ(far.error().find("did you mean"), std::string::npos) << far.error();  // nothing close: no guess
}

TEST(ConfigErrors, DidYouMeanIsBoundedOnHostileKeys) {
  EXPECT_EQ(closest_name(std::string(100000, 'a'), {"enabled"}), "");
  EXPECT_EQ(closest_name("enabeld", {"enabled", "events"}), "enabled");
  EXPECT_EQ(closest_name("", {"enabled"}), "");
}

TEST(PolicyHooks, AreReadWithTheirActionsAndRefusedWhenWrong) {
  auto c = parse_config(
      "[[policy.hook]]\nname = \"ticket\"\non = [\"drain\", \"reboot\"]\ncommand = [\"/usr/local/bin/ticket\", \"%n\"]\n"
      "timeout_s = 5\nattempts = 4\n",
      "h.toml");
  ASSERT_TRUE(c) << c.error();
  ASSERT_EQ(c->policy.hooks.size(), 1u);
  EXPECT_EQ(c->policy.hooks[0].on, (std::vector<Action>{Action::drain, Action::reboot}));
  EXPECT_EQ(c->policy.hooks[0].timeout.count(), 5);
  EXPECT_EQ(c->policy.hooks[0].attempts, 4u);
  auto bad_on = parse_config("[[policy.hook]]\nname = \"t\"\non = [\"warn\"]\ncommand = [\"/bin/true\"]\n", "h.toml");
  ASSERT_FALSE(bad_on);
  EXPECT_NE(bad_on.error().find("h.toml:3:"), std::string::npos) << bad_on.error();
  EXPECT_NE(bad_on.error().find("must be an array of drain, reboot, requeue, resume, signal"), std::string::npos) << bad_on.error();
  auto no_command = parse_config("[[policy.hook]]\nname = \"t\"\non = [\"drain\"]\n", "h.toml");
  ASSERT_FALSE(no_command);
  EXPECT_NE(no_command.error().find("needs name, on and command"), std::string::npos) << no_command.error();
  auto twice = parse_config("[[policy.hook]]\nname = \"t\"\non = [\"drain\"]\ncommand = [\"/bin/true\"]\n"
                            "[[policy.hook]]\nname = \"t\"\non = [\"resume\"]\ncommand = [\"/bin/true\"]\n",
                            "h.toml");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("named twice"), std::string::npos) << twice.error();
  auto relative = parse_config("[[policy.hook]]\nname = \"t\"\non = [\"drain\"]\ncommand = [\"bin/x\"]\n", "h.toml");
  ASSERT_FALSE(relative);
  EXPECT_NE(relative.error().find("first word must be an absolute path"), std::string::npos) << relative.error();
}

// What the central reader accepted before the sections moved to their checks, still accepted.
TEST(ConfigCompatibility, EmptyRuleAndXidArraysAreNoEntries) {
  auto c = parse_config("[checks.kernel_log]\nrule = []\n[checks.gpu]\nxid = []\n", "f.toml");
  ASSERT_TRUE(c) << c.error();
}

TEST(ConfigCompatibility, AKernelLogRuleKeyErrorPointsAtTheKey) {
  auto c = parse_config("[[checks.kernel_log.rule]]\n  code = 5\n", "f.toml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().rfind("f.toml:2:3: key 'code' in [[checks.kernel_log.rule]] must be a string", 0), 0u) << c.error();
}

TEST(ConfigCompatibility, IgnoreIsAnXidActionOnly) {
  auto xid = parse_config("[[checks.gpu.xid]]\nxid = 43\naction = \"ignore\"\n[checks.gpu]\nxid_unknown_action = \"ignore\"\n", "f.toml");
  ASSERT_TRUE(xid) << xid.error();
  auto node = parse_config("[checks.gpu]\nmemory_action = \"ignore\"\n", "f.toml");
  ASSERT_FALSE(node);
  EXPECT_NE(node.error().find("must be one of none, warn, notify_only, drain, reboot"), std::string::npos) << node.error();
  auto rule = parse_config("[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = \"x\"\naction = \"ignore\"\n", "f.toml");
  ASSERT_FALSE(rule);
}

// healthd --check-config: the daemon's own loading and building, without starting or touching state.
TEST(CheckConfig, SaysWhatWouldRunAndLeavesTheStateDirectoryAlone) {
  HostFixture host("[[checks.script]]\nname = \"ib\"\ncommand = [\"/bin/true\"]\ninterval_s = 60\n"
                   "[[policy.hook]]\nname = \"ticket\"\non = [\"drain\"]\ncommand = [\"/bin/true\"]\n");
  std::ostringstream out, err;
  EXPECT_EQ(check_config(host.file, {}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find(": ok\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("  gpu_xid\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("  script:ib (every 60 s)\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("hook ticket after drain: /bin/true"), std::string::npos) << out.str();
  EXPECT_TRUE(std::filesystem::is_empty(host.dir / "state"));  // no state file written or read there
}

TEST(CheckConfig, ABadConfigIsExit2WithThePosition) {
  HostFixture host("[checks.efa]\ncounter_windw_s = 5\n");
  std::ostringstream out, err;
  EXPECT_EQ(check_config(host.file, {}, out, err), 2);
  EXPECT_NE(err.str().find("healthd.toml:10:1: unknown key 'counter_windw_s' in [checks.efa]; did you mean"), std::string::npos)
      << err.str();
  EXPECT_TRUE(out.str().empty());
}
