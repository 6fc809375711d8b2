// The GPU judges, handed snapshots: every threshold, the GPU named in the verdict, unknown fields
// reported as not checked.
#include <gtest/gtest.h>

#include "checks/gpu/gpu_judges.hpp"
#include "collectors/nvml/nvml_api.hpp"

using namespace ar::healthd;

namespace {
GpuSnapshot healthy(unsigned i) {
  GpuSnapshot g;
  g.index = i;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-" + std::to_string(1000 + i);
  g.bus_id = "00000000:1" + std::to_string(i) + ":00.0";
  g.ecc_uncorrected_volatile = 0;
  g.ecc_corrected_volatile = 0;
  g.retired_pages_sbe = 0;
  g.retired_pages_dbe = 0;
  g.retired_pages_pending = false;
  g.row_remap = GpuSnapshot::RowRemap{};
  g.clock_event_reasons = 0;
  g.pcie_gen = 5;
  g.pcie_max_gen = 5;
  g.pcie_width = 16;
  g.pcie_max_width = 16;
  g.temperature_c = 45;
  g.power_mw = 300000;
  g.power_limit_mw = 700000;
  g.persistence_mode = true;
  g.nvlink_supported = true;
  for (unsigned l = 0; l < 18; ++l) g.nvlinks.push_back({l, true, 0, 0, 0, 0, 0});
  g.recovery_action = NVML_GPU_RECOVERY_ACTION_NONE;
  return g;
}
GpuFleetSnapshot fleet(unsigned n = 8) {
  GpuFleetSnapshot f;
  f.nvml_loaded = true;
  f.driver_version = "570.86.15";
  f.device_count = n;
  for (unsigned i = 0; i < n; ++i) f.gpus.push_back(healthy(i));
  return f;
}
bool mentions(const CheckResult& r, const std::string& s) { return r.message.find(s) != std::string::npos; }
}  // namespace

TEST(GpuJudges, AHealthyFleetPassesEveryJudge) {
  auto f = fleet();
  GpuThresholds t;
  t.expected_count = 8;
  for (const auto& r : {judge_gpu_nvml(f), judge_gpu_count(f, t), judge_gpu_memory(f, t), judge_gpu_clocks(f, t),
                        judge_gpu_pcie(f, t), judge_gpu_nvlink(f, &f, t), judge_gpu_recovery(f),
                        judge_gpu_temperature(f, t), judge_gpu_power(f, t)})
    EXPECT_EQ(r.status, Status::ok) << r.check << ": " << r.message;
}

TEST(GpuJudges, NoNvmlIsNotApplicableUnlessGpusAreExpected) {
  GpuFleetSnapshot none;
  none.load_error = "libnvidia-ml.so.1: cannot open shared object file";
  GpuThresholds t;
  EXPECT_EQ(judge_gpu_nvml(none).status, Status::ok);
  EXPECT_TRUE(mentions(judge_gpu_nvml(none), "not applicable"));
  EXPECT_EQ(judge_gpu_count(none, t).status, Status::ok);
  t.required = true;
  auto r = judge_gpu_count(none, t);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "GPU-NVML-MISSING");
}

TEST(GpuJudges, AMissingGpuIsAFaultAndALostOneNeedsAReboot) {
  auto f = fleet(7);
  GpuThresholds t;
  t.expected_count = 8;
  auto r = judge_gpu_count(f, t);
  EXPECT_EQ(r.code, "GPU-COUNT");
  EXPECT_TRUE(mentions(r, "7 of 8"));
  f = fleet(8);
  f.gpus[5].lost = "nvmlDeviceGetTemperature: GPU is lost";
  r = judge_gpu_count(f, t);
  EXPECT_EQ(r.code, "GPU-LOST");
  EXPECT_EQ(r.action, Remedy::reboot);
  EXPECT_TRUE(mentions(r, "GPU 5 (00000000:15:00.0, GPU-1005)")) << r.message;
}

TEST(GpuJudges, MemoryErrorsNameTheGpuAndTheCure) {
  GpuThresholds t;
  auto f = fleet();
  f.gpus[2].row_remap->pending = true;
  auto r = judge_gpu_memory(f, t);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "GPU-ROW-REMAP-PENDING");
  EXPECT_TRUE(mentions(r, "GPU 2") && mentions(r, "reset"));
  f = fleet();
  f.gpus[3].row_remap->failure = true;
  EXPECT_EQ(judge_gpu_memory(f, t).code, "GPU-ROW-REMAP-FAILED");
  f = fleet();
  f.gpus[1].ecc_uncorrected_volatile = 2;
  EXPECT_EQ(judge_gpu_memory(f, t).code, "GPU-ECC-UNCORRECTED");
  t.ecc_uncorrected_max = 2;
  EXPECT_EQ(judge_gpu_memory(f, t).status, Status::ok);
  f = fleet();
  f.gpus[0].retired_pages_pending = true;
  EXPECT_EQ(judge_gpu_memory(f, t).code, "GPU-PAGE-RETIREMENT-PENDING");
  f = fleet();
  f.gpus[0].retired_pages_dbe = 40;
  f.gpus[0].retired_pages_sbe = 21;
  EXPECT_EQ(judge_gpu_memory(f, t).code, "GPU-RETIRED-PAGES");
  t.memory_action = Remedy::warn;
  EXPECT_EQ(judge_gpu_memory(f, t).status, Status::warn);
}

TEST(GpuJudges, MemoryUnknownEverywhereIsNotChecked) {
  auto f = fleet(2);
  f.missing_symbols = {{"nvmlDeviceGetRemappedRows", "row remapping"}};
  for (auto& g : f.gpus) {
    g.row_remap.reset();
    g.ecc_uncorrected_volatile.reset();
    g.retired_pages_pending.reset();
  }
  auto r = judge_gpu_memory(f, {});
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_TRUE(mentions(r, "not checked") && mentions(r, "nvmlDeviceGetRemappedRows")) << r.message;
}

TEST(GpuJudges, HardwareSlowdownWarnsByDefault) {
  auto f = fleet();
  f.gpus[4].clock_event_reasons = nvmlClocksThrottleReasonHwPowerBrakeSlowdown | nvmlClocksEventReasonGpuIdle;
  GpuThresholds t;
  auto r = judge_gpu_clocks(f, t);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_TRUE(mentions(r, "power brake"));
  f.gpus[4].clock_event_reasons = nvmlClocksEventReasonSwPowerCap;  // a power cap is not a fault
  EXPECT_EQ(judge_gpu_clocks(f, t).status, Status::ok);
  f.gpus[4].clock_event_reasons = nvmlClocksThrottleReasonHwThermalSlowdown;
  t.clock_slowdown_action = Remedy::drain;
  EXPECT_EQ(judge_gpu_clocks(f, t).status, Status::fault);
}

TEST(GpuJudges, ADegradedPcieLinkCountsButAnIdleGpuMayLowerItsGeneration) {
  GpuThresholds t;
  auto f = fleet();
  f.gpus[6].pcie_width = 8;
  auto r = judge_gpu_pcie(f, t);
  EXPECT_EQ(r.code, "GPU-PCIE-WIDTH");
  EXPECT_EQ(r.action, Remedy::drain);
  EXPECT_TRUE(mentions(r, "x8 of x16"));
  f = fleet();
  f.gpus[6].pcie_gen = 1;
  f.gpus[6].clock_event_reasons = nvmlClocksEventReasonGpuIdle;
  EXPECT_EQ(judge_gpu_pcie(f, t).status, Status::ok);
  f.gpus[6].clock_event_reasons = 0;
  r = judge_gpu_pcie(f, t);
  EXPECT_EQ(r.code, "GPU-PCIE-GEN");
  EXPECT_EQ(r.status, Status::warn);
}

TEST(GpuJudges, NvlinkDownAgainstTheExpectedCountOrTheLastSweep) {
  GpuThresholds t;
  auto before = fleet();
  auto now = fleet();
  now.gpus[1].nvlinks[3].active = false;
  auto r = judge_gpu_nvlink(now, &before, t);
  EXPECT_EQ(r.code, "GPU-NVLINK-DOWN");
  EXPECT_TRUE(mentions(r, "NVLink 3"));
  // With no earlier sweep, only an expected count can tell.
  EXPECT_EQ(judge_gpu_nvlink(now, nullptr, t).status, Status::ok);
  t.nvlink_expected_links = 18;
  EXPECT_EQ(judge_gpu_nvlink(now, nullptr, t).code, "GPU-NVLINK-DOWN");
}

TEST(GpuJudges, NvlinkErrorsRisingWarnAndACounterResetIsNotARise) {
  GpuThresholds t;
  t.nvlink_error_rise_max = 100;
  auto before = fleet();
  before.gpus[0].nvlinks[0].replay = 5000;
  auto now = before;
  now.gpus[0].nvlinks[0].replay = 5050;
  EXPECT_EQ(judge_gpu_nvlink(now, &before, t).status, Status::ok);
  now.gpus[0].nvlinks[0].replay = 5200;
  auto r = judge_gpu_nvlink(now, &before, t);
  EXPECT_EQ(r.code, "GPU-NVLINK-ERRORS");
  EXPECT_EQ(r.status, Status::warn);
  now.gpus[0].nvlinks[0].replay = 3;  // reset by a GPU reset
  EXPECT_EQ(judge_gpu_nvlink(now, &before, t).status, Status::ok);
}

TEST(GpuJudges, TheDriversRecoveryActionDecides) {
  auto f = fleet();
  f.gpus[7].recovery_action = NVML_GPU_RECOVERY_ACTION_NODE_REBOOT;
  auto r = judge_gpu_recovery(f);
  EXPECT_EQ(r.action, Remedy::reboot);
  EXPECT_EQ(r.code, "GPU-RECOVERY-REBOOT");
  EXPECT_TRUE(mentions(r, "GPU 7"));
  f.gpus[7].recovery_action = NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET;
  EXPECT_EQ(judge_gpu_recovery(f).action, Remedy::drain);
  for (auto& g : f.gpus) g.recovery_action.reset();
  f.missing_symbols = {{"nvmlDeviceGetFieldValues", "GPU recovery action"}};
  EXPECT_TRUE(mentions(judge_gpu_recovery(f), "not checked"));
}

TEST(GpuJudges, TemperatureAndPowerThresholds) {
  GpuThresholds t;
  t.temperature_max_c = 90;
  auto f = fleet();
  f.gpus[2].temperature_c = 91;
  auto r = judge_gpu_temperature(f, t);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_TRUE(mentions(r, "91 C"));
  t.persistence_required = true;
  f.gpus[1].persistence_mode = false;
  EXPECT_EQ(judge_gpu_power(f, t).code, "GPU-PERSISTENCE-OFF");
}

TEST(GpuJudges, ShortPciAddressMatchesTheKernelLogsForm) {
  EXPECT_EQ(short_pci_address("00000000:3B:00.0"), "0000:3b:00");
  EXPECT_EQ(short_pci_address("0000:3b:00"), "0000:3b:00");
}
