#include <gtest/gtest.h>

#include "result_area.hpp"

#include "checks/node/node_check.hpp"
#include "collectors/node_info.hpp"
#include "collectors/sysfs_read.hpp"
#include "fake_tree.hpp"

using namespace ar::healthd;

namespace {
using ar::test::area;

NodeSnapshot healthy() {
  NodeSnapshot s;
  s.cpus_online = 192u;
  s.mem_total_kib = 2000ull * 1024 * 1024;  // 2000 GiB
  s.shm_bytes = 1000ull << 30;
  s.clock = ClockState{false, 1000};
  s.processes = std::set<std::string>{"munged", "slurmd", "systemd"};
  return s;
}
}  // namespace

TEST(CpuList, CountsRangesAndSingles) {
  EXPECT_EQ(count_cpu_list("0-95").value(), 96u);
  EXPECT_EQ(count_cpu_list("0-3,8,10-11").value(), 7u);
  EXPECT_EQ(count_cpu_list("0").value(), 1u);
  EXPECT_FALSE(count_cpu_list(""));
  EXPECT_FALSE(count_cpu_list("3-1"));
  EXPECT_FALSE(count_cpu_list("0-x"));
}

TEST(NodeInfo, ReadsAFakeHostTree) {
  ar::test::FakeTree t;
  t.write("/sys/devices/system/cpu/online", "0-191\n");
  t.write("/proc/meminfo", "MemTotal:       2097152000 kB\nMemFree:        1 kB\n");
  t.write("/proc/1/comm", "systemd\n");
  t.write("/proc/42/comm", "munged\n");
  t.write("/proc/self/comm", "not-a-pid\n");
  t.mkdir("/dev/shm");
  auto s = read_node_info(t.root(), false);
  EXPECT_EQ(s.cpus_online.value(), 192u);
  EXPECT_EQ(s.mem_total_kib.value(), 2097152000u);
  EXPECT_GT(s.shm_bytes.value(), 0u);
  EXPECT_EQ(*s.processes, (std::set<std::string>{"systemd", "munged"}));
  EXPECT_FALSE(s.clock);  // not asked for
  // no sysfs CPU list: /proc/cpuinfo
  t.remove("/sys");
  t.write("/proc/cpuinfo", "processor\t: 0\nmodel name\t: x\n\nprocessor\t: 1\n");
  EXPECT_EQ(read_online_cpus(t.root()).value(), 2u);
}

TEST(NodeInfo, AnEmptyTreeIsUnreadableNotEmpty) {
  ar::test::FakeTree t;
  auto s = read_node_info(t.root(), false);
  EXPECT_FALSE(s.cpus_online);
  EXPECT_FALSE(s.mem_total_kib);
  EXPECT_FALSE(s.shm_bytes);
  EXPECT_FALSE(s.processes);
  // and the judge says so as errors, never as faults
  NodeConfig c;
  c.expected_cpus = 4;
  c.min_memory_gib = 1;
  c.min_shm_gib = 1;
  c.clock_action = Remedy::none;
  for (const auto& r : judge_node(s, c)) EXPECT_NE(r.status, Status::fault) << r.check;
  EXPECT_EQ(area(judge_node(s, c), "node.process.munged").status, Status::error);
}

TEST(NodeInfo, TheRealClockCanBeRead) { EXPECT_TRUE(read_clock_state()) << read_clock_state().error(); }

TEST(NodeJudge, UnsetExpectationsAreNotJudged) {
  NodeConfig c;
  auto s = healthy();
  s.cpus_online = 2u;
  auto rs = judge_node(s, c);
  ASSERT_EQ(rs.size(), 6u);  // cpus, memory, shm, clock, munged, slurmd
  for (const auto& r : rs) EXPECT_EQ(r.status, Status::ok) << r.check << ": " << r.message;
}

TEST(NodeJudge, CpusMemoryAndShmBelowExpectationDrain) {
  NodeConfig c;
  c.expected_cpus = 192;
  c.min_memory_gib = 1843.2;
  c.min_shm_gib = 64;
  auto s = healthy();
  for (const auto& r : judge_node(s, c)) EXPECT_EQ(r.status, Status::ok) << r.check << ": " << r.message;
  s.cpus_online = 190u;
  s.mem_total_kib = 1500ull * 1024 * 1024;
  s.shm_bytes = 32ull << 30;
  auto rs = judge_node(s, c);
  EXPECT_EQ(area(rs, "node.cpus").code, "NODE-CPU-COUNT");
  EXPECT_EQ(area(rs, "node.cpus").message, "190 of 192 CPUs online");
  EXPECT_EQ(area(rs, "node.memory").code, "NODE-MEM");
  EXPECT_EQ(area(rs, "node.memory").message, "1500.0 GiB of memory, at least 1843.2 GiB expected");
  EXPECT_EQ(area(rs, "node.shm").code, "NODE-SHM");
  EXPECT_EQ(area(rs, "node.shm").action, Remedy::drain);
}

TEST(NodeJudge, ClockUnsyncTakesTheConfiguredAction) {
  NodeConfig c;
  auto s = healthy();
  s.clock = ClockState{true, 16000000};
  EXPECT_EQ(area(judge_node(s, c), "node.clock").status, Status::warn);
  EXPECT_EQ(area(judge_node(s, c), "node.clock").code, "NODE-CLOCK-UNSYNC");
  c.clock_action = Remedy::drain;
  EXPECT_EQ(area(judge_node(s, c), "node.clock").status, Status::fault);
  c.clock_action = Remedy::none;
  EXPECT_EQ(area(judge_node(s, c), "node.clock").status, Status::ok);
  s.clock = std::unexpected("ntp_adjtime: EPERM");
  c.clock_action = Remedy::warn;
  EXPECT_EQ(area(judge_node(s, c), "node.clock").status, Status::error);
}

TEST(NodeJudge, AMissingDaemonDrainsByName) {
  NodeConfig c;
  c.required_processes = {"munged", "slurmd", "a-very-long-daemon-name"};
  auto s = healthy();
  s.processes = std::set<std::string>{"slurmd", "a-very-long-dae"};  // comm keeps 15 characters
  auto rs = judge_node(s, c);
  auto munge = area(rs, "node.process.munged");
  EXPECT_EQ(munge.status, Status::fault);
  EXPECT_EQ(munge.code, "NODE-DAEMON-munged");
  EXPECT_EQ(munge.message, "munged is not running");
  EXPECT_EQ(area(rs, "node.process.slurmd").status, Status::ok);
  EXPECT_EQ(area(rs, "node.process.a-very-long-daemon-name").status, Status::ok);
}

TEST(ProcessFinder, RemembersWhereAProcessRunsAndLooksAgainWhenItMoved) {
  ar::test::FakeTree t;
  t.write("/proc/1/comm", "systemd\n");
  t.write("/proc/42/comm", "munged\n");
  t.write("/proc/77/comm", "slurmd\n");
  ProcessFinder finder;
  const std::vector<std::string> wanted = {"munged", "slurmd"};
  EXPECT_EQ(finder.find(t.root(), wanted).value(), (std::set<std::string>{"munged", "slurmd"}));
  // Restarted under another pid: the remembered one is gone, so the next look walks again.
  t.remove("/proc/77");
  t.write("/proc/900/comm", "slurmd\n");
  EXPECT_EQ(finder.find(t.root(), wanted).value(), (std::set<std::string>{"munged", "slurmd"}));
  // A reused pid running something else is not taken for the remembered process.
  t.write("/proc/42/comm", "bash\n");
  EXPECT_EQ(finder.find(t.root(), wanted).value(), (std::set<std::string>{"slurmd"}));
  t.remove("/proc");
  EXPECT_FALSE(finder.find(t.root(), wanted));
}
