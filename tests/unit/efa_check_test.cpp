#include <gtest/gtest.h>

#include "result_area.hpp"

#include "checks/efa/efa_check.hpp"
#include "collectors/efa_sysfs.hpp"
#include "fake_tree.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
const std::string kIb = "/sys/class/infiniband/";

void add_efa(const ar::test::FakeTree& t, const std::string& dev, const std::string& state = "4: ACTIVE") {
  t.write(kIb + dev + "/device/vendor", "0x1d0f\n");
  t.write(kIb + dev + "/device/device", "0xefa1\n");
  t.write(kIb + dev + "/ports/1/state", state + "\n");
  t.write(kIb + dev + "/ports/1/hw_counters/rdma_read_wr_err", "0\n");
  t.write(kIb + dev + "/ports/1/hw_counters/rx_drops", "7\n");
  t.write(kIb + dev + "/ports/1/hw_counters/rdma_read_resp_bytes", "123456\n");
}

void set_counter(const ar::test::FakeTree& t, const std::string& dev, const std::string& name, std::uint64_t v) {
  t.write(kIb + dev + "/ports/1/hw_counters/" + name, std::to_string(v) + "\n");
}

using ar::test::area;

EfaDevice efa_device(std::string name, std::vector<EfaPort> ports) {
  EfaDevice d;
  d.name = std::move(name);
  d.device_id = "0xefa1";
  d.ports = std::move(ports);
  return d;
}

EfaConfig config_expecting(std::uint32_t n) {
  EfaConfig c;
  c.expected_devices = n;
  c.counter_window = 60s;
  c.counter_thresholds = {{"rdma_read_wr_err", 5}, {"rx_drops", 100}};
  c.counter_action = Remedy::drain;
  return c;
}
}  // namespace

TEST(EfaSysfs, ReadsOnlyAmazonDevicesTheirPortsAndWantedCounters) {
  ar::test::FakeTree t;
  add_efa(t, "rdmap16s27");
  add_efa(t, "rdmap0s6", "1: DOWN");
  t.write(kIb + "mlx5_0/device/vendor", "0x15b3\n");  // a Mellanox HCA: not ours to judge
  t.write(kIb + "mlx5_0/ports/1/state", "4: ACTIVE\n");
  auto snap = read_efa_sysfs(t.root(), {"rdma_read_wr_err", "rx_drops", "absent_counter"});
  ASSERT_EQ(snap.devices.size(), 2u);
  EXPECT_EQ(snap.devices[0].name, "rdmap0s6");
  EXPECT_EQ(snap.devices[0].ports.at(0).state, "DOWN");
  EXPECT_EQ(snap.devices[1].ports.at(0).state, "ACTIVE");
  EXPECT_EQ(snap.devices[1].ports.at(0).counters.at("rx_drops"), 7u);
  EXPECT_FALSE(snap.devices[1].ports.at(0).counters.contains("absent_counter"));
  EXPECT_FALSE(snap.devices[1].ports.at(0).counters.contains("rdma_read_resp_bytes"));  // not asked for
}

// CI read a fake state file between its truncation and its write, and drained the node for
// "rdmap32s27 port 1 is " (an empty state): a state file that holds no state cannot say a port is down.
TEST(EfaSysfs, AStateFileWithNoStateIsUnreadableNotAPortDown) {
  ar::test::FakeTree t;
  add_efa(t, "rdmap16s27", "");
  auto snap = read_efa_sysfs(t.root(), {});
  ASSERT_EQ(snap.devices.size(), 1u);
  ASSERT_EQ(snap.devices[0].ports.size(), 1u);
  EXPECT_NE(snap.devices[0].ports[0].error.find("ports/1/state: no state in it"), std::string::npos) << snap.devices[0].ports[0].error;
  auto r = area(judge_efa(snap, 1, EfaConfig{}, {}), "efa.ports");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_EQ(r.action, Remedy::none);
  EXPECT_TRUE(r.devices.empty());  // neither up nor down: no reading, no series
}

TEST(EfaSysfs, NoRdmaClassIsNoDeviceNotAnError) {
  ar::test::FakeTree t;
  EXPECT_TRUE(read_efa_sysfs(t.root(), {}).devices.empty());
  EXPECT_EQ(port_state_name("4: ACTIVE"), "ACTIVE");
  EXPECT_EQ(port_state_name("DOWN"), "DOWN");
}

TEST(EfaJudge, NoHardwareNoExpectationIsNotApplicable) {
  auto rs = judge_efa({}, 0, EfaConfig{}, {});
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, Status::ok) << r.check;
    EXPECT_NE(r.message.find("not applicable"), std::string::npos) << r.message;
  }
}

TEST(EfaJudge, FewerDevicesThanExpectedDrainsMoreWarns) {
  EfaSnapshot snap;
  snap.devices = {efa_device("rdmap0", {{"1", "ACTIVE", "", {}}})};
  auto fewer = area(judge_efa(snap, 2, EfaConfig{}, {}), "efa.count");
  EXPECT_EQ(fewer.status, Status::fault);
  EXPECT_EQ(fewer.code, "EFA-COUNT");
  EXPECT_EQ(fewer.action, Remedy::drain);
  EXPECT_EQ(fewer.message, "1 of 2 EFA devices present");
  EXPECT_EQ(area(judge_efa({}, 4, EfaConfig{}, {}), "efa.count").status, Status::fault);  // expected, none there
  auto more = area(judge_efa(snap, 0, EfaConfig{}, {}), "efa.count");
  EXPECT_EQ(more.status, Status::ok);  // not expected but present: fine
  snap.devices.push_back(snap.devices[0]);
  EXPECT_EQ(area(judge_efa(snap, 1, EfaConfig{}, {}), "efa.count").status, Status::warn);
}

TEST(EfaJudge, APortNotActiveDrainsNamingTheDevice) {
  EfaSnapshot snap;
  snap.devices = {efa_device("rdmap0", {{"1", "ACTIVE", "", {}}}), efa_device("rdmap16s27", {{"1", "DOWN", "", {}}})};
  auto r = area(judge_efa(snap, 2, EfaConfig{}, {}), "efa.ports");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "EFA-PORT-DOWN");
  EXPECT_EQ(r.action, Remedy::drain);
  EXPECT_EQ(r.message, "rdmap16s27 port 1 is DOWN");
  EXPECT_EQ(r.detail["ports"].size(), 2u);
  // Each port, typed, for the metrics (healthd_efa_device_up).
  EXPECT_EQ(r.devices.efa_ports, (std::vector<EfaPortReading>{{"rdmap0", "1", true}, {"rdmap16s27", "1", false}}));
  EXPECT_TRUE(r.devices.gpus.empty() && r.devices.neuron_devices.empty());
}

TEST(EfaJudge, AnUnreadablePortStateIsAnErrorNotAFault) {
  EfaSnapshot snap;
  snap.devices = {efa_device("rdmap0", {{"1", "", "/sys/.../state: cannot open", {}}})};
  auto r = area(judge_efa(snap, 1, EfaConfig{}, {}), "efa.ports");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_EQ(r.action, Remedy::none);
  EXPECT_TRUE(r.devices.empty());  // neither up nor down: no reading, no series
}

TEST(EfaJudge, CounterRiseAboveThresholdTakesTheConfiguredAction) {
  EfaSnapshot snap;
  snap.devices = {efa_device("rdmap0", {{"1", "ACTIVE", "", {{"rdma_read_wr_err", 100}, {"rx_drops", 0}}}})};
  auto c = config_expecting(1);
  auto at = [&](std::uint64_t rise) { return area(judge_efa(snap, 1, c, {{"rdmap0", "1", "rdma_read_wr_err", 100, rise}}), "efa.counters"); };
  EXPECT_EQ(at(5).status, Status::ok);  // at the threshold: still fine
  auto over = at(6);
  EXPECT_EQ(over.status, Status::fault);
  EXPECT_EQ(over.code, "EFA-COUNTER-rdma_read_wr_err");
  EXPECT_EQ(over.message, "rdmap0 port 1: rdma_read_wr_err rose by 6 within 60 s (threshold 5)");
  c.counter_action = Remedy::warn;
  EXPECT_EQ(at(6).status, Status::warn);
  c.counter_action = Remedy::none;
  EXPECT_EQ(at(6).status, Status::ok);
}

TEST(CounterWindow, RiseIsOverTheWindowAndAResetIsANewBaseline) {
  CounterWindow w(60s);
  const auto t0 = CounterWindow::Clock::time_point{} + 1h;
  EXPECT_EQ(w.observe("k", 1000000, t0), 0u);  // the first sample is the baseline, however large
  EXPECT_EQ(w.observe("k", 1000010, t0 + 10s), 10u);
  EXPECT_EQ(w.observe("k", 1000030, t0 + 50s), 30u);
  // 70 s on: the t0 sample has left the window, the 10 s one is the baseline now
  EXPECT_EQ(w.observe("k", 1000040, t0 + 70s), 30u);
  // the driver reloaded: the counter starts from 0 again; that is not a rise
  EXPECT_EQ(w.observe("k", 3, t0 + 80s), 0u);
  EXPECT_EQ(w.observe("k", 8, t0 + 90s), 5u);
  // a quiet counter has no rise once the window has passed
  EXPECT_EQ(w.observe("k", 8, t0 + 200s), 0u);
  w.keep_only({});
  EXPECT_EQ(w.size(), 0u);
}

TEST(EfaCheck, OnAFakeTreePortDownAndCountersAcrossADriverReload) {
  ar::test::FakeTree t;
  add_efa(t, "rdmap16s27");
  add_efa(t, "rdmap32s27");
  EfaCheck check(config_expecting(2), t.root());
  const auto t0 = CounterWindow::Clock::time_point{} + 1h;
  auto first = check.run_at(t0);
  ASSERT_EQ(first.size(), 3u);
  for (const auto& r : first) EXPECT_EQ(r.status, Status::ok) << r.check << ": " << r.message;

  set_counter(t, "rdmap32s27", "rdma_read_wr_err", 50);
  auto rising = area(check.run_at(t0 + 10s), "efa.counters");
  EXPECT_EQ(rising.status, Status::fault);
  EXPECT_EQ(rising.code, "EFA-COUNTER-rdma_read_wr_err");
  EXPECT_NE(rising.message.find("rdmap32s27 port 1"), std::string::npos) << rising.message;

  // driver reload: counters back near zero; no fault from the fall, and none after the window
  set_counter(t, "rdmap32s27", "rdma_read_wr_err", 1);
  set_counter(t, "rdmap32s27", "rx_drops", 0);
  EXPECT_EQ(area(check.run_at(t0 + 80s), "efa.counters").status, Status::ok);

  t.write(kIb + "rdmap16s27/ports/1/state", "1: DOWN\n");
  auto down = area(check.run_at(t0 + 90s), "efa.ports");
  EXPECT_EQ(down.code, "EFA-PORT-DOWN");
  EXPECT_EQ(down.message, "rdmap16s27 port 1 is DOWN");

  t.remove(kIb + "rdmap16s27");
  auto gone = area(check.run_at(t0 + 100s), "efa.count");
  EXPECT_EQ(gone.code, "EFA-COUNT");
  EXPECT_EQ(gone.message, "1 of 2 EFA devices present");
}

// The efa driver binds PCI ids 0xefa0-0xefa3 (amzn-drivers kernel/linux/efa/src/efa_main.c,
// efa_pci_tbl); the vendor id alone counted any Amazon RDMA function as an EFA device.
TEST(EfaSysfs, TheDeviceIdIsCheckedAndANewerEfaGenerationIsCountedAndNoted) {
  ar::test::FakeTree t;
  add_efa(t, "rdmap16s27");
  add_efa(t, "rdmap48s27");
  t.write(kIb + "rdmap48s27/device/device", "0xefa4\n");  // not in this healthd's table: a newer EFA
  add_efa(t, "rdmap80s0");
  t.write(kIb + "rdmap80s0/device/device", "0x7064\n");  // an Amazon function that is not EFA
  add_efa(t, "rdmap96s0");
  t.remove(kIb + "rdmap96s0/device/device");  // no id to check
  auto snap = read_efa_sysfs(t.root(), {"rx_drops"});
  ASSERT_EQ(snap.devices.size(), 2u);
  EXPECT_TRUE(snap.devices[0].known_id);
  EXPECT_FALSE(snap.devices[1].known_id);
  EXPECT_EQ(snap.ignored, (std::vector<std::string>{"rdmap80s0 (0x1d0f:0x7064)", "rdmap96s0 (0x1d0f:device id unreadable)"}));
  auto count = area(judge_efa(snap, 2, EfaConfig{}, {}), "efa.count");
  EXPECT_EQ(count.status, Status::ok);
  EXPECT_EQ(count.message,
            "2 EFA devices; counted as EFA, a device id newer than this healthd knows: rdmap48s27 (0xefa4); not EFA (PCI "
            "device id): rdmap80s0 (0x1d0f:0x7064) (and 1 more)");
  EXPECT_EQ(area(judge_efa(snap, 3, EfaConfig{}, {}), "efa.count").status, Status::fault);  // the non-EFA one does not make up a count
}

// Device counters (<dev>/hw_counters: cmds_err, no_completion_cmds, ...; efa_verbs.c
// efa_device_stats_descs) were never read.
TEST(EfaCheck, DeviceLevelErrorCountersAreJudgedLikePortCounters) {
  ar::test::FakeTree t;
  add_efa(t, "rdmap16s27");
  t.write(kIb + "rdmap16s27/hw_counters/cmds_err", "0\n");
  t.write(kIb + "rdmap16s27/hw_counters/no_completion_cmds", "4\n");
  t.write(kIb + "rdmap16s27/hw_counters/keep_alive_rcvd", "1000\n");
  auto c = config_expecting(1);
  c.counter_thresholds = {{"cmds_err", 10}, {"no_completion_cmds", 0}, {"rx_drops", 100}};
  EfaCheck check(c, t.root());
  const auto t0 = CounterWindow::Clock::time_point{} + 1h;
  auto first = area(check.run_at(t0), "efa.counters");
  EXPECT_EQ(first.status, Status::ok) << first.message;  // 4 since the driver loaded is the baseline, not a rise
  EXPECT_EQ(first.message, "3 error counters within their thresholds over 60 s");
  t.write(kIb + "rdmap16s27/hw_counters/no_completion_cmds", "5\n");
  auto r = area(check.run_at(t0 + 10s), "efa.counters");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "EFA-COUNTER-no_completion_cmds");
  EXPECT_EQ(r.message, "rdmap16s27: no_completion_cmds rose by 1 within 60 s (threshold 0)");
}

// Before efa r2.17 ("Add Network HW statistics counters") three of the default port counters do not
// exist; nothing said so.
TEST(EfaCheck, CountersTheDriverDoesNotHaveAreListedOnceAsNotAvailable) {
  ar::test::FakeTree t;
  add_efa(t, "rdmap16s27");
  add_efa(t, "rdmap32s27");
  t.write("/sys/module/efa/version", "2.15.3g\n");
  auto c = config_expecting(2);
  c.counter_thresholds = {{"rdma_read_wr_err", 5}, {"retrans_timeout_events", 100}, {"unresponsive_remote_events", 10}};
  auto r = area(EfaCheck(c, t.root()).run_at(CounterWindow::Clock::time_point{} + 1h), "efa.counters");
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_EQ(r.message,
            "2 error counters within their thresholds over 60 s; not available on this driver (efa 2.15.3g): "
            "retrans_timeout_events (efa r2.17 and later), unresponsive_remote_events (efa r2.17 and later)");
  EXPECT_EQ(r.detail["not_available"].size(), 2u);
  EXPECT_EQ(r.detail["driver_version"], "2.15.3g");
}
