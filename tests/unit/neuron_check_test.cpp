// The Neuron reader and check against the sysfs trees of each driver generation (neuron_fixtures.hpp
// cites the source of every path).
#include <gtest/gtest.h>

#include "result_area.hpp"

#include "checks/neuron/neuron_check.hpp"
#include "collectors/neuron_layout.hpp"
#include "collectors/neuron_sysfs.hpp"
#include "neuron_fixtures.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;
using ar::test::add_neuron_device;
using ar::test::kNeuronDevices;
using ar::test::NeuronDeviceShape;
using ar::test::set_driver_version;

namespace {

using ar::test::area;

std::vector<CheckResult> run(const ar::test::FakeTree& t, std::uint32_t expected, NeuronConfig c = {}) {
  c.expected_devices = expected;
  return NeuronCheck(c, t.root()).run();
}

// A host of `n` devices shaped `shape`, with driver `version` ("" for none).
void host(const ar::test::FakeTree& t, int n, const NeuronDeviceShape& shape, const std::string& version) {
  for (int i = 0; i < n; ++i) add_neuron_device(t, i, shape);
  if (!version.empty()) set_driver_version(t, version);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(NeuronLayout, DriverVersionsCompareByTheirNumbersAndMapToAGeneration) {
  auto v = parse_driver_version("2.30.2.0");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->parts, (std::vector<unsigned>{2, 30, 2, 0}));
  EXPECT_TRUE(v->at_least({2, 30, 2}));
  EXPECT_FALSE(v->at_least({2, 31}));
  EXPECT_EQ(parse_driver_version("2.17.3g")->parts, (std::vector<unsigned>{2, 17, 3}));  // the efa build suffix
  EXPECT_EQ(*parse_driver_version("2.30"), *parse_driver_version("2.30.0.0"));
  EXPECT_FALSE(parse_driver_version("garbage"));
  EXPECT_FALSE(parse_driver_version(""));
  EXPECT_EQ(parse_driver_version("2.9\x01\xff")->text, "2.9\\u0001\\xff");  // hostile bytes made printable
  EXPECT_EQ(neuron_layout_for(std::nullopt), NeuronLayout::unknown_version);
  EXPECT_EQ(neuron_layout_for(parse_driver_version("2.12.5.0")), NeuronLayout::before_ecc);
  EXPECT_EQ(neuron_layout_for(parse_driver_version("2.14.5.0")), NeuronLayout::ecc_counters);
  EXPECT_EQ(neuron_layout_for(parse_driver_version("2.27.4.0")), NeuronLayout::ecc_counters);
  EXPECT_EQ(neuron_layout_for(parse_driver_version("2.28.0.0")), NeuronLayout::health_status);
  EXPECT_EQ(neuron_layout_for(parse_driver_version("2.30.2.0")), NeuronLayout::health_status);
  EXPECT_EQ(neuron_layout_for(parse_driver_version("2.31.1.0")), NeuronLayout::reorganised);
  EXPECT_EQ(release_name(kNeuronUnhealthyComponentsSince), "2.30.2");
  EXPECT_EQ(release_name(kNeuronHealthStatusSince), "2.28");
}

TEST(NeuronSysfs, ReadsEccFilesAsPlainNumbersWithTheirPathAndSkipsRuntimeStatusCounters) {
  ar::test::FakeTree t;
  for (int n : {0, 1, 10, 2}) add_neuron_device(t, n, ar::test::trn1_2_24());
  set_driver_version(t, "2.24.7.0");
  // sysfs links the class directory back to the device: a loop if followed
  std::filesystem::create_directories(t.root() / "sys/class/neuron_device");
  std::filesystem::create_directory_symlink("../../devices/virtual/neuron_device/neuron0", t.root() / "sys/class/neuron_device/neuron0");
  // a per-core counter in the counter-directory shape (total/present)
  t.write(kNeuronDevices + "neuron10/neuron_core1/stats/hardware/sram_ecc_uncorrected/total", "3\n");
  t.write(kNeuronDevices + "neuron10/neuron_core1/stats/hardware/sram_ecc_uncorrected/present", "1\n");
  auto snap = read_neuron_sysfs(t.root());
  EXPECT_TRUE(snap.sysfs_present);
  ASSERT_TRUE(snap.driver);
  EXPECT_EQ(snap.driver->text, "2.24.7.0");
  ASSERT_EQ(snap.devices.size(), 4u);
  EXPECT_EQ(snap.devices[3].name, "neuron10");
  EXPECT_EQ(snap.devices[0].device_name, "Trainium1");
  EXPECT_EQ(snap.dev_nodes, 4u);
  ASSERT_EQ(snap.devices[0].counters.size(), 3u);  // stats/status/hw_hbm_ue_error & co are not ECC counters
  EXPECT_EQ(snap.devices[0].counters[0].path, "stats/hardware/mem_ecc_repairable_uncorrected");
  ASSERT_EQ(snap.devices[3].counters.size(), 4u);
  const auto& core = snap.devices[3].counters.front();
  EXPECT_EQ(core.scope, "neuron10/neuron_core1");
  EXPECT_EQ(core.path, "neuron_core1/stats/hardware/sram_ecc_uncorrected");
  EXPECT_EQ(core.value, 3u);
  EXPECT_TRUE(snap.devices[0].errors.empty());
}

// Driver 2.28 added stats/hardware/health_status/ beside the counters; the reader took every
// subdirectory of stats/hardware for a counter and failed on .../health_status/total: neuron.errors
// was a broken check on every healthy node with a current driver.
TEST(NeuronCheck, Driver228HealthStatusDirectoryIsNotACounter) {
  ar::test::FakeTree t;
  host(t, 2, ar::test::trn1_2_28(), "2.28.0.0");
  auto rs = run(t, 2);
  const auto& errors = area(rs, "neuron.errors");
  EXPECT_EQ(errors.status, Status::ok) << errors.message;
  EXPECT_EQ(errors.message.find("cannot"), std::string::npos) << errors.message;
  auto snap = read_neuron_sysfs(t.root());
  EXPECT_EQ(snap.devices[0].health.path, "stats/hardware/health_status");
  EXPECT_EQ(snap.devices[0].health.other.at("hbm_ecc_error_count"), "0");  // shown, not judged
  EXPECT_FALSE(snap.devices[0].health.unhealthy_components);
  EXPECT_TRUE(has(area(rs, "neuron.health").message, "without unhealthy_components")) << area(rs, "neuron.health").message;
}

// Driver 2.30.2 added correctable counters; every counter without "repairable" in its name used to be
// judged uncorrectable: mem_ecc_corrected = 3 drained a healthy Trainium node.
TEST(NeuronCheck, CorrectableErrorsAreDataAndNeverDrainByDefault) {
  ar::test::FakeTree t;
  host(t, 2, ar::test::trn2_2_30_2(), "2.30.2.0");
  t.write(kNeuronDevices + "neuron1/stats/hardware/mem_ecc_corrected", "3\n");
  t.write(kNeuronDevices + "neuron1/stats/hardware/sram_ecc_corrected", "2\n");
  auto r = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(r.status, Status::ok) << r.message;
  EXPECT_EQ(r.action, Remedy::none);
  EXPECT_EQ(r.message, "no uncorrectable errors on 2 Neuron devices; 5 corrected (data, not judged)");
  bool shown = false;
  for (const auto& c : r.detail["counters"])
    shown = shown || (c["counter"] == "mem_ecc_corrected" && c["value"] == 3 && c["kind"] == "correctable");
  EXPECT_TRUE(shown) << r.detail.dump();
  // past the admin's limit: the configured action, warn by default
  NeuronConfig c;
  c.max_corrected = 2;
  auto over = area(run(t, 2, c), "neuron.errors");
  EXPECT_EQ(over.status, Status::warn);
  EXPECT_EQ(over.code, "NEURON-ECC-CORRECTED");
  EXPECT_EQ(over.message, "neuron1: mem_ecc_corrected = 3 (corrected HBM ECC errors) (limit 2)");
  c.corrected_action = Remedy::drain;
  EXPECT_EQ(area(run(t, 2, c), "neuron.errors").action, Remedy::drain);
}

TEST(NeuronCheck, AnUncorrectableErrorDrainsARepairableOneAsksForAReboot) {
  ar::test::FakeTree t;
  host(t, 2, ar::test::trn2_2_30_2(), "2.30.2.0");
  EXPECT_EQ(area(run(t, 2), "neuron.errors").status, Status::ok);
  t.write(kNeuronDevices + "neuron1/stats/hardware/mem_ecc_repairable_uncorrected", "1\n");
  auto repairable = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(repairable.code, "NEURON-HW-ERR");
  EXPECT_EQ(repairable.action, Remedy::reboot);
  t.write(kNeuronDevices + "neuron1/stats/hardware/sram_ecc_uncorrected", "2\n");
  t.write(kNeuronDevices + "neuron1/stats/hardware/mem_ecc_corrected", "40\n");  // never counted as uncorrectable
  auto r = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.action, Remedy::drain);  // an unrepairable error needs the hardware replaced
  EXPECT_EQ(r.message, "neuron1: sram_ecc_uncorrected = 2 (uncorrectable SRAM ECC errors) (and 1 more)");
  // Each device, typed, for the metrics (healthd_neuron_device_healthy): a corrected count is no harm.
  EXPECT_EQ(r.devices.neuron_devices, (std::vector<NeuronReading>{{"neuron0", true}, {"neuron1", false}}));
  // cleared (driver reload or reboot): passes again
  t.write(kNeuronDevices + "neuron1/stats/hardware/sram_ecc_uncorrected", "0\n");
  t.write(kNeuronDevices + "neuron1/stats/hardware/mem_ecc_repairable_uncorrected", "0\n");
  EXPECT_EQ(area(run(t, 2), "neuron.errors").status, Status::ok);
  EXPECT_EQ(area(run(t, 2), "neuron.errors").devices.neuron_devices,
            (std::vector<NeuronReading>{{"neuron0", true}, {"neuron1", true}}));
}

TEST(NeuronCheck, AThresholdAboveZeroToleratesThatMany) {
  ar::test::FakeTree t;
  host(t, 1, ar::test::trn1_2_24(), "2.24.7.0");
  t.write(kNeuronDevices + "neuron0/stats/hardware/mem_ecc_uncorrected", "2\n");
  NeuronConfig c;
  c.max_uncorrected = 2;
  EXPECT_EQ(area(run(t, 1, c), "neuron.errors").status, Status::ok);
  c.max_uncorrected = 1;
  EXPECT_EQ(area(run(t, 1, c), "neuron.errors").status, Status::fault);
}

TEST(NeuronCheck, CountersAnOlderDriverLacksAreListedOnceAsNotAvailable) {
  ar::test::FakeTree t;
  host(t, 4, ar::test::trn1_2_24(), "2.24.7.0");
  auto rs = run(t, 4);
  const auto& errors = area(rs, "neuron.errors");
  EXPECT_EQ(errors.status, Status::ok);
  EXPECT_EQ(errors.message,
            "no uncorrectable errors on 4 Neuron devices; not available on this driver: mem_ecc_corrected (2.30.2 and "
            "later), sram_ecc_corrected (2.30.2 and later)");
  EXPECT_EQ(errors.detail["driver_version"], "2.24.7.0");
  EXPECT_EQ(errors.detail["layout"], "2.14-2.27 (stats/hardware ECC counters)");
  const auto& health = area(rs, "neuron.health");
  EXPECT_EQ(health.status, Status::ok);
  EXPECT_EQ(health.message, "not available on this driver: stats/hardware/health_status (2.28 and later; Neuron driver 2.24.7.0)");
}

TEST(NeuronCheck, ADriverBeforeTheEccCountersIsABrokenCheckNamingItsVersion) {
  ar::test::FakeTree t;
  auto shape = ar::test::trn1_2_24();
  shape.ecc = false;
  host(t, 2, shape, "2.12.5.0");
  auto r = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_EQ(r.action, Remedy::none);
  EXPECT_EQ(r.message,
            "neuron0: Neuron driver 2.12.5.0 predates the ECC counters in sysfs (added in 2.14): uncorrectable errors "
            "cannot be seen; upgrade aws-neuronx-dkms (and 1 more)");
}

TEST(NeuronCheck, InferentiaOneExportsNoEccCountersAndSaysSo) {
  ar::test::FakeTree t;
  NeuronDeviceShape inf1;
  inf1.device_name = "Inferentia";  // [src-2.24] v1: nsysfsmetric_add_ecc_nodes_v1 adds nothing
  inf1.arch = "NDv1";
  inf1.cores = 4;
  inf1.ecc = false;
  host(t, 2, inf1, "2.21.37.0");
  auto r = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_TRUE(has(r.message, "not available: the Neuron driver exports no ECC counters for Inferentia (v1)")) << r.message;
}

// [guide-2.33]: 2.31 moved nodes. Assumption of this fixture: the ECC files left stats/hardware for
// a directory of their own. The reader follows the documented names, and says where it found them.
TEST(NeuronCheck, Driver231MovedCountersAreFoundByNameAndStillJudged) {
  ar::test::FakeTree t;
  auto shape = ar::test::trn2_2_30_2();
  shape.ecc_dir = "stats/hardware/ecc";
  host(t, 2, shape, "2.31.10.0");
  auto ok = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(ok.status, Status::ok) << ok.message;
  EXPECT_EQ(ok.detail["layout"], "2.31 and later (reorganised tree)");
  t.write(kNeuronDevices + "neuron1/stats/hardware/ecc/mem_ecc_uncorrected", "1\n");
  auto r = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.message, "neuron1: mem_ecc_uncorrected = 1 (uncorrectable HBM ECC errors) at stats/hardware/ecc/mem_ecc_uncorrected");
}

// If 2.31 renamed the counters as well, nothing documented is left to read: a broken check naming the
// driver, never "no uncorrectable errors" (the check used to blame "a driver older than 2.14").
TEST(NeuronCheck, AnUnknownLayoutIsABrokenCheckNamingTheDriverVersion) {
  ar::test::FakeTree t;
  auto shape = ar::test::trn2_2_30_2();
  shape.ecc = false;
  host(t, 2, shape, "2.31.10.0");
  t.write(kNeuronDevices + "neuron0/stats/hw_health/hbm_uncorrectable", "1\n");  // a name no source documents
  t.write(kNeuronDevices + "neuron1/stats/hw_health/hbm_uncorrectable", "0\n");
  auto r = area(run(t, 2), "neuron.errors");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_EQ(r.message,
            "neuron0: no uncorrectable ECC counter (mem_ecc_uncorrected, sram_ecc_uncorrected) under "
            "/sys/devices/virtual/neuron_device/neuron0; Neuron driver 2.31.10.0 (2.31 and later (reorganised tree)): "
            "a sysfs layout this healthd does not know (and 1 more)");
  t.remove("/sys/module/neuron/version");
  auto unknown = area(run(t, 2), "neuron.errors");
  EXPECT_TRUE(has(unknown.message, "Neuron driver version unknown (no /sys/module/neuron/version)")) << unknown.message;
}

TEST(NeuronCheck, TheDriversHealthBitmapDrainsOnADocumentedSubsystemOnly) {
  ar::test::FakeTree t;
  host(t, 2, ar::test::trn2_2_30_2(), "2.30.2.0");
  const auto file = kNeuronDevices + "neuron1/stats/hardware/health_status/unhealthy_components";
  auto health = [&](NeuronConfig c = {}) { return area(run(t, 2, c), "neuron.health"); };
  EXPECT_EQ(health().status, Status::ok);
  EXPECT_EQ(health().message, "the Neuron driver reports 2 devices healthy (health_status)");
  t.write(file, "none\n");
  EXPECT_EQ(health().status, Status::ok);
  t.write(file, "hbm,link_efa\n");
  auto r = health();
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "NEURON-UNHEALTHY");
  EXPECT_EQ(r.action, Remedy::drain);
  EXPECT_EQ(r.message, "neuron1: the Neuron driver reports hbm, link_efa unhealthy (stats/hardware/health_status/unhealthy_components)");
  EXPECT_EQ(r.devices.neuron_devices, (std::vector<NeuronReading>{{"neuron0", true}, {"neuron1", false}}));
  NeuronConfig warn_only;
  warn_only.unhealthy_action = Remedy::warn;
  EXPECT_EQ(health(warn_only).status, Status::warn);
  // a word that is no documented subsystem (a format this healthd does not know): told, never a drain
  t.write(file, "0x00000040\n");
  auto odd = health();
  EXPECT_EQ(odd.status, Status::warn);
  EXPECT_EQ(odd.action, Remedy::warn);
  EXPECT_TRUE(has(odd.message, "no subsystem this healthd knows")) << odd.message;
  // ... but the device is not shown healthy: the driver lists something other than "none"
  EXPECT_EQ(odd.devices.neuron_devices, (std::vector<NeuronReading>{{"neuron0", true}, {"neuron1", false}}));
  // the errors result is untouched by the bitmap
  EXPECT_EQ(area(run(t, 2), "neuron.errors").status, Status::ok);
}

TEST(NeuronCheck, AHeartbeatThatStopsWarnsOnlyWhenTheAdminAsks) {
  ar::test::FakeTree t;
  host(t, 1, ar::test::trn2_2_30_2(), "2.30.2.0");
  NeuronConfig c;
  c.expected_devices = 1;
  const auto t0 = NeuronCheck::Clock::time_point{} + 1h;
  NeuronCheck off(c, t.root());
  (void)off.run_at(t0);
  EXPECT_EQ(area(off.run_at(t0 + 2h), "neuron.health").status, Status::ok);  // not judged by default
  c.heartbeat_stall = 600s;
  NeuronCheck on(c, t.root());
  (void)on.run_at(t0);
  EXPECT_EQ(area(on.run_at(t0 + 599s), "neuron.health").status, Status::ok);
  auto stale = area(on.run_at(t0 + 600s), "neuron.health");
  EXPECT_EQ(stale.status, Status::warn);
  EXPECT_EQ(stale.code, "NEURON-HEALTH-STALE");
  EXPECT_EQ(stale.message, "neuron0: healthcheck_heartbeat has stayed 1 for 600 s: the driver's health bitmap may be stale");
  t.write(kNeuronDevices + "neuron0/stats/hardware/health_status/healthcheck_heartbeat", "2\n");
  EXPECT_EQ(area(on.run_at(t0 + 601s), "neuron.health").status, Status::ok);  // it moved
}

TEST(NeuronCheck, NoDriverNoExpectationIsNotApplicable) {
  ar::test::FakeTree t;
  auto rs = run(t, 0);
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_TRUE(has(r.message, "not applicable")) << r.message;
  }
}

TEST(NeuronCheck, MissingDevicesOrDeviceNodesDrain) {
  ar::test::FakeTree t;
  host(t, 2, ar::test::trn1_2_24(), "2.24.7.0");
  EXPECT_EQ(area(run(t, 2), "neuron.count").status, Status::ok);
  auto few = area(run(t, 16), "neuron.count");
  EXPECT_EQ(few.status, Status::fault);
  EXPECT_EQ(few.code, "NEURON-COUNT");
  EXPECT_EQ(few.message, "2 of 16 Neuron devices in sysfs, 2 /dev/neuron* nodes");
  t.remove("/dev/neuron1");
  EXPECT_EQ(area(run(t, 2), "neuron.count").code, "NEURON-COUNT");
  EXPECT_EQ(area(run(t, 1), "neuron.count").status, Status::warn);  // more than the profile says
}

TEST(NeuronCheck, AnUnreadableKnownCounterIsAnErrorNotAFault) {
  ar::test::FakeTree t;
  host(t, 1, ar::test::trn1_2_24(), "2.24.7.0");
  t.write(kNeuronDevices + "neuron0/stats/hardware/mem_ecc_uncorrected", "garbage\n");
  t.write(kNeuronDevices + "neuron0/stats/hardware/some_new_text_node", "hello\n");  // unknown, not a number: ignored
  auto r = area(run(t, 1), "neuron.errors");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_EQ(r.action, Remedy::none);
  EXPECT_TRUE(has(r.message, "mem_ecc_uncorrected: not an unsigned integer")) << r.message;
  EXPECT_EQ(r.message.find("some_new_text_node"), std::string::npos) << r.message;
}

TEST(NeuronSysfs, AnUnknownNumericHardwareCounterIsShownNeverJudged) {
  ar::test::FakeTree t;
  host(t, 1, ar::test::trn1_2_24(), "2.24.7.0");
  t.write(kNeuronDevices + "neuron0/stats/hardware/dram_thermal_throttle_events", "9\n");
  auto r = area(run(t, 1), "neuron.errors");
  EXPECT_EQ(r.status, Status::ok);
  bool shown = false;
  for (const auto& c : r.detail["counters"]) shown = shown || (c["counter"] == "dram_thermal_throttle_events" && c["kind"] == "unknown");
  EXPECT_TRUE(shown) << r.detail.dump();
}

TEST(NeuronSysfs, ADeepOrHugeTreeIsBounded) {
  ar::test::FakeTree t;
  host(t, 1, ar::test::trn1_2_24(), "2.24.7.0");
  // deeper than the reader goes: not read (and no fault from it)
  t.write(kNeuronDevices + "neuron0/a/b/c/d/e/f/g/mem_ecc_uncorrected", "5\n");
  auto snap = read_neuron_sysfs(t.root());
  for (const auto& c : snap.devices[0].counters) EXPECT_NE(c.value, 5u) << c.path;
  for (int i = 0; i < 21000; ++i) t.mkdir(kNeuronDevices + "neuron0/stats/x/" + std::to_string(i));
  auto huge = read_neuron_sysfs(t.root());
  ASSERT_FALSE(huge.devices[0].errors.empty());
  EXPECT_TRUE(has(huge.devices[0].errors.front(), "entries; stopped reading"));
}

TEST(NeuronSysfs, ComponentListsSplitAtCommasAndBlanks) {
  EXPECT_EQ(split_components("hbm,link_efa"), (std::vector<std::string>{"hbm", "link_efa"}));
  EXPECT_EQ(split_components(" hbm, sram \n"), (std::vector<std::string>{"hbm", "sram"}));
  EXPECT_TRUE(split_components("").empty());
  EXPECT_TRUE(split_components(",,\n").empty());
}
