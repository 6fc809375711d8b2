// The GPU inventory (healthctl status, healthd_gpu_health): built from the GPU checks' real results
// against the fake NVML library, and from hand-made snapshots where a judge's detail is the point.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "checks/gpu/gpu_check.hpp"
#include "checks/gpu/gpu_inventory.hpp"
#include "checks/gpu/gpu_judges.hpp"
#include "checks/gpu/xid_check.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// The fake NVML's scenario for this test, as nvml_collector_test.cpp sets it.
struct InventoryScenario {
  ar::test::TempDir dir;
  std::filesystem::path file = dir / "nvml.json";
  explicit InventoryScenario(const std::string& text) {
    std::ofstream(dir / "nvml.json.tmp") << text;
    std::filesystem::rename(dir / "nvml.json.tmp", file);
    ::setenv("FAKE_NVML_SCENARIO", file.c_str(), 1);
  }
  ~InventoryScenario() {
    ::unsetenv("FAKE_NVML_SCENARIO");
    std::filesystem::remove(file);
  }
};

std::vector<CheckResult> gpu_results(const std::string& scenario, GpuThresholds t = {}) {
  InventoryScenario s(scenario);
  GpuCheck check(FAKE_NVML_PATH, t, 5s, nullptr);
  return check.run();
}

const json* problem(const json& gpu, const std::string& check) {
  for (const auto& p : gpu["problems"])
    if (p["check"] == check) return &p;
  return nullptr;
}

GpuSnapshot gpu(unsigned i) {
  GpuSnapshot g;
  g.index = i;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-" + std::to_string(1000 + i);
  g.bus_id = "00000000:1" + std::to_string(i) + ":00.0";
  g.nvlink_supported = true;
  for (unsigned l = 0; l < 4; ++l) g.nvlinks.push_back({l, true, 0, 0, 0, 0, 0});
  g.temperature_c = 40;
  return g;
}

// The GPU check's results for `scenario`, and the XID check's after XID 79 on GPU 1 at `at` and
// `xid13s` XID 13s on GPU 0, a second apart. The kernel log names GPUs by short PCI address: GPU 0 of
// the fake sits at 00000000:18:00.0, GPU 1 at 00000000:28:00.0.
std::vector<CheckResult> with_xids(const std::string& scenario, int xid13s, XidCheck::Clock::time_point at) {
  auto results = gpu_results(scenario);
  XidCheck xids(XidPolicy::defaults(), 600s);
  xids.record({79, "0000:28:00", "kernel_log", "NVRM: Xid (PCI:0000:28:00): 79, GPU has fallen off the bus.", at});
  for (int i = 0; i < xid13s; ++i)
    xids.record({13, "0000:18:00", "kernel_log", "NVRM: Xid (PCI:0000:18:00): 13, Graphics Engine Exception", at + i * 1s});
  results.push_back(xids.judge(at + 2s));
  return results;
}

}  // namespace

TEST(GpuInventory, AHealthyNodeListsEveryGpuOkWithItsIdsAndFigures) {
  auto inv = gpu_inventory(gpu_results(R"({"devices": [{}, {}]})")).listed;
  ASSERT_EQ(inv.size(), 2u) << inv.dump(2);
  const auto& g = inv[1];
  EXPECT_EQ(g["index"], 1);
  EXPECT_EQ(g["bus_id"], "00000000:28:00.0");
  EXPECT_EQ(g["uuid"], "GPU-fa4e0000-0000-4000-8000-000000000001");
  EXPECT_EQ(g["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g["health"], "ok");
  EXPECT_TRUE(g["problems"].empty());
  EXPECT_EQ(g["ecc_uncorrected"], 0);
  EXPECT_EQ(g["ecc_corrected"], 0);
  EXPECT_EQ(g["remap"], (json{{"corrected", 0}, {"uncorrected", 0}, {"pending", false}, {"failure", false}}));
  EXPECT_TRUE(g["xid"].is_null());
}

TEST(GpuInventory, AFaultIsPinnedOnItsGpuAloneWithTheCheckAndCode) {
  auto results = gpu_results(
      R"({"devices": [{}, {"remap": {"corrected": 0, "uncorrected": 3, "pending": true, "failure": false},
                           "ecc": {"volatile_uncorrected": 3, "volatile_corrected": 7}}, {}]})");
  auto inv = gpu_inventory(results).listed;
  ASSERT_EQ(inv.size(), 3u);
  EXPECT_EQ(inv[0]["health"], "ok");
  EXPECT_EQ(inv[2]["health"], "ok");
  const auto& bad = inv[1];
  EXPECT_EQ(bad["health"], "fault");
  const auto* p = problem(bad, "gpu.memory");
  ASSERT_NE(p, nullptr) << bad.dump(2);
  // The worst of the GPU's memory findings, as the result itself names it.
  EXPECT_EQ((*p)["code"], "GPU-ROW-REMAP-PENDING");
  EXPECT_NE((*p)["message"].get<std::string>().find("GPU 1"), std::string::npos);
  EXPECT_EQ(bad["ecc_uncorrected"], 3);
  EXPECT_EQ(bad["ecc_corrected"], 7);
  EXPECT_EQ(bad["remap"]["pending"], true);
  EXPECT_EQ(bad["remap"]["uncorrected"], 3);
}

TEST(GpuInventory, AnXidGoesToTheGpuAtItsPciAddressWithItsCountAndTime) {
  const auto at = XidCheck::Clock::now();
  auto inv = gpu_inventory(with_xids(R"({"devices": [{}, {}]})", 2, at)).listed;
  ASSERT_EQ(inv.size(), 2u);
  // XID 79 holds at once and calls for a reboot: a fault of GPU 1.
  EXPECT_EQ(inv[1]["health"], "fault");
  ASSERT_TRUE(inv[1]["xid"].is_object()) << inv.dump(2);
  EXPECT_EQ(inv[1]["xid"]["xid"], 79);
  EXPECT_EQ(inv[1]["xid"]["count"], 1);
  EXPECT_EQ(inv[1]["xid"]["at_ms"], std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count());
  const auto* p = problem(inv[1], "gpu_xid");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ((*p)["code"], "GPU-XID-79");
  // An application's XID 13 only warns, on GPU 0.
  EXPECT_EQ(inv[0]["health"], "warn");
  EXPECT_EQ(inv[0]["xid"]["xid"], 13);
  EXPECT_EQ(inv[0]["xid"]["count"], 2);
}

// The same GPUs, typed, for the metrics: the ids, the health and the newest XID of each, in the list's order.
TEST(GpuInventory, EachGpuIsAlsoATypedReadingWithItsHealthAndNewestXid) {
  const auto inv = gpu_inventory(with_xids(R"({"devices": [{}, {}, {}]})", 1, XidCheck::Clock::now()));
  const auto& gpus = inv.readings.gpus;
  ASSERT_EQ(gpus.size(), inv.listed.size());
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_TRUE(inv.readings.efa_ports.empty() && inv.readings.neuron_devices.empty());
  EXPECT_EQ(gpus[1], (GpuReading{1, "GPU-fa4e0000-0000-4000-8000-000000000001", "00000000:28:00.0", "NVIDIA H100 80GB HBM3",
                                 Status::fault, 79u}));
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_EQ(gpus[0].health, Status::warn);  // XID 13: the application's
  EXPECT_EQ(gpus[0].last_xid, 13u);
  EXPECT_EQ(gpus[2].health, Status::ok);
  EXPECT_EQ(gpus[2].last_xid, 0u);  // none
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(inv.listed[i]["uuid"], gpus[i].uuid);
    EXPECT_EQ(inv.listed[i]["health"], to_string(gpus[i].health));
  }
}

TEST(GpuInventory, TheWorstFindingOfAGpuWinsAndAWarningStaysAWarning) {
  GpuFleetSnapshot fleet;
  fleet.nvml_loaded = true;
  fleet.gpus = {gpu(0), gpu(1)};
  fleet.gpus[0].temperature_c = 99;  // over the limit: a warning by default
  fleet.gpus[1].temperature_c = 99;
  GpuFleetSnapshot before = fleet;
  fleet.gpus[1].nvlinks[2].active = false;  // a link seen active went down: a drain
  GpuThresholds t;
  auto inv = gpu_inventory({judge_gpu_temperature(fleet, t), judge_gpu_nvlink(fleet, &before, t)}).listed;
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_EQ(inv[0]["health"], "warn");
  EXPECT_EQ(inv[0]["problems"].size(), 1u);
  EXPECT_EQ(inv[1]["health"], "fault");
  EXPECT_EQ(inv[1]["problems"].size(), 2u);
  ASSERT_NE(problem(inv[1], "gpu.nvlink"), nullptr) << inv.dump(2);
  EXPECT_EQ((*problem(inv[1], "gpu.nvlink"))["code"], "GPU-NVLINK-DOWN");
}

TEST(GpuInventory, EachJudgeRecordsItsVerdictOnTheGpuItFoundItOn) {
  // NVLink findings are made before the GPU's figures are added: matched by index, not by order.
  GpuFleetSnapshot fleet;
  fleet.nvml_loaded = true;
  fleet.gpus = {gpu(0), gpu(1), gpu(2)};
  GpuFleetSnapshot before = fleet;
  fleet.gpus[2].nvlinks[0].replay = 5000;
  before.gpus[2].nvlinks[0].replay = 0;
  GpuThresholds t;
  auto r = judge_gpu_nvlink(fleet, &before, t);
  ASSERT_EQ(r.detail["gpus"].size(), 3u);
  EXPECT_EQ(r.detail["gpus"][0]["status"], "ok");
  EXPECT_FALSE(r.detail["gpus"][0].contains("code"));
  EXPECT_EQ(r.detail["gpus"][2]["status"], "warn");
  EXPECT_EQ(r.detail["gpus"][2]["code"], "GPU-NVLINK-ERRORS");
  EXPECT_EQ(r.detail["gpus"][2]["name"], "NVIDIA H100 80GB HBM3");
  // A finding about the node, not one GPU (fewer GPUs than expected), marks none of them.
  t.expected_count = 4;
  auto count = judge_gpu_count(fleet, t);
  EXPECT_EQ(count.status, Status::fault);
  for (const auto& g : count.detail["gpus"]) EXPECT_EQ(g["status"], "ok");
}

TEST(GpuInventory, TheJsonFormIsTheSameAsTheResultsAndSurvivesOddShapes) {
  auto results = gpu_results(R"({"devices": [{}, {"temperature": 120}]})");
  json as_status = json::array();
  for (const auto& r : results) as_status.push_back(r.to_json());
  EXPECT_EQ(gpu_inventory_of(as_status), gpu_inventory(results).listed);
  EXPECT_EQ(gpu_inventory(results).listed[1]["health"], "warn");
  // Shapes it does not expect are skipped, never thrown on.
  const auto odd = json::parse(R"([1, "x", null, {"check": "gpu.memory"}, {"check": "gpu.memory", "detail": []},
    {"check": "gpu.memory", "detail": {"gpus": [5, {"index": "zero"}, {"index": -1}, {"index": 2, "bus_id": 7,
      "status": ["fault"], "row_remap": {"pending": "yes", "corrected": -3}}]}},
    {"check": "gpu_xid", "detail": {"events": [3, {"xid": "79", "gpu": "0000:18:00"}, {"xid": 79},
      {"xid": 79, "gpu": "", "active": "yes", "last_ms": "now"}]}}])");
  json inv;
  ASSERT_NO_THROW(inv = gpu_inventory_of(odd));
  ASSERT_EQ(inv.size(), 1u);
  EXPECT_EQ(inv[0]["index"], 2);
  EXPECT_EQ(inv[0]["bus_id"], "");
  EXPECT_EQ(inv[0]["health"], "ok");
  EXPECT_EQ(inv[0]["remap"]["pending"], false);
  EXPECT_EQ(inv[0]["remap"]["corrected"], 0);
  EXPECT_EQ(gpu_inventory_of(json::object()), json::array());
}
