#include <gtest/gtest.h>

#include "checks/neuron_check.hpp"
#include "collectors/neuron_sysfs.hpp"
#include "fake_tree.hpp"

using namespace ar::healthd;

namespace {
const std::string kNd = "/sys/devices/virtual/neuron_device/";

void add_neuron(const ar::test::FakeTree& t, int n) {
  const auto d = kNd + "neuron" + std::to_string(n);
  t.write(d + "/core_count", "2\n");
  t.write(d + "/stats/hardware/mem_ecc_uncorrected", "0\n");
  t.write(d + "/stats/hardware/mem_ecc_repairable_uncorrected", "0\n");
  t.write(d + "/stats/hardware/sram_ecc_uncorrected", "0\n");
  t.mkdir(d + "/neuron_core0/stats/status");
  t.write("/dev/neuron" + std::to_string(n), "");
}

const CheckResult& area(const std::vector<CheckResult>& rs, const std::string& check) {
  for (const auto& r : rs)
    if (r.check == check) return r;
  throw std::runtime_error("no result for " + check);
}

std::vector<CheckResult> run(const ar::test::FakeTree& t, std::uint32_t expected) {
  NeuronConfig c;
  c.expected_devices = expected;
  return NeuronCheck(c, t.root()).run();
}
}  // namespace

TEST(NeuronSysfs, ReadsDevicesInNumberOrderWithDeviceAndCoreCounters) {
  ar::test::FakeTree t;
  for (int n : {0, 1, 10, 2}) add_neuron(t, n);
  // a per-core counter, in the driver's counter-directory shape (total/present)
  t.write(kNd + "neuron10/neuron_core1/stats/hardware/sram_ecc_uncorrected/total", "3\n");
  t.write(kNd + "neuron10/neuron_core1/stats/hardware/sram_ecc_uncorrected/present", "1\n");
  auto snap = read_neuron_sysfs(t.root());
  EXPECT_TRUE(snap.sysfs_present);
  ASSERT_EQ(snap.devices.size(), 4u);
  EXPECT_EQ(snap.devices[3].name, "neuron10");
  EXPECT_EQ(snap.dev_nodes, 4u);
  EXPECT_EQ(snap.devices[0].counters.size(), 3u);
  ASSERT_EQ(snap.devices[3].counters.size(), 4u);
  const auto& core = snap.devices[3].counters.back();
  EXPECT_EQ(core.scope, "neuron10/neuron_core1");
  EXPECT_EQ(core.value, 3u);
}

TEST(NeuronCheck, NoDriverNoExpectationIsNotApplicable) {
  ar::test::FakeTree t;
  auto rs = run(t, 0);
  ASSERT_EQ(rs.size(), 2u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_NE(r.message.find("not applicable"), std::string::npos) << r.message;
  }
}

TEST(NeuronCheck, MissingDevicesOrDeviceNodesDrain) {
  ar::test::FakeTree t;
  add_neuron(t, 0);
  add_neuron(t, 1);
  EXPECT_EQ(area(run(t, 2), "neuron.count").status, Status::ok);
  auto few = area(run(t, 16), "neuron.count");
  EXPECT_EQ(few.status, Status::fault);
  EXPECT_EQ(few.code, "NEURON-COUNT");
  EXPECT_EQ(few.message, "2 of 16 Neuron devices in sysfs, 2 /dev/neuron* nodes");
  t.remove("/dev/neuron1");
  EXPECT_EQ(area(run(t, 2), "neuron.count").code, "NEURON-COUNT");
  EXPECT_EQ(area(run(t, 1), "neuron.count").status, Status::warn);  // more than the profile says
}

TEST(NeuronCheck, AnUncorrectableErrorDrainsARepairableOneAsksForAReboot) {
  ar::test::FakeTree t;
  add_neuron(t, 0);
  add_neuron(t, 1);
  EXPECT_EQ(area(run(t, 2), "neuron.errors").status, Status::ok);
  t.write(kNd + "neuron1/stats/hardware/mem_ecc_repairable_uncorrected", "1\n");
  auto repairable = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(repairable.code, "NEURON-HW-ERR");
  EXPECT_EQ(repairable.action, Action::reboot);
  t.write(kNd + "neuron1/stats/hardware/sram_ecc_uncorrected", "2\n");
  auto r = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.action, Action::drain);  // an unrepairable error needs the hardware replaced
  EXPECT_EQ(r.message, "neuron1: sram_ecc_uncorrected = 2 (uncorrectable SRAM ECC errors) (and 1 more)");
  // cleared (driver reload or reboot): passes again
  t.write(kNd + "neuron1/stats/hardware/sram_ecc_uncorrected", "0\n");
  t.write(kNd + "neuron1/stats/hardware/mem_ecc_repairable_uncorrected", "0\n");
  EXPECT_EQ(area(run(t, 2), "neuron.errors").status, Status::ok);
}

TEST(NeuronCheck, AThresholdAboveZeroToleratesThatMany) {
  ar::test::FakeTree t;
  add_neuron(t, 0);
  t.write(kNd + "neuron0/stats/hardware/mem_ecc_uncorrected", "2\n");
  NeuronConfig c;
  c.max_uncorrected = 2;
  EXPECT_EQ(area(NeuronCheck(c, t.root()).run(), "neuron.errors").status, Status::ok);
  c.max_uncorrected = 1;
  EXPECT_EQ(area(NeuronCheck(c, t.root()).run(), "neuron.errors").status, Status::fault);
}

TEST(NeuronCheck, UnreadableOrAbsentCountersAreAnErrorNotAFault) {
  ar::test::FakeTree t;
  add_neuron(t, 0);
  t.write(kNd + "neuron0/stats/hardware/mem_ecc_uncorrected", "garbage\n");
  auto r = area(run(t, 1), "neuron.errors");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_EQ(r.action, Action::none);
  t.remove(kNd + "neuron0/stats/hardware");  // a driver without the ECC counters
  auto old = area(run(t, 1), "neuron.errors");
  EXPECT_EQ(old.status, Status::error);
  EXPECT_NE(old.message.find("no stats/hardware"), std::string::npos) << old.message;
}
