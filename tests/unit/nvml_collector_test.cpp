// The NVML path of healthd against the fake NVML library (tests/fakes): loading, symbol fallbacks,
// the snapshot, a hung call turned into a verdict within the deadline, and events as they happen.
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "checks/gpu/gpu_check.hpp"
#include "collectors/nvml/nvml_collector.hpp"
#include "collectors/nvml/nvml_events.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
struct CollectorScenario {
  ar::test::TempDir dir;
  std::filesystem::path file = dir / "nvml.json";
  explicit CollectorScenario(const std::string& scenario_json = "{}") {
    write(scenario_json);
    ::setenv("FAKE_NVML_SCENARIO", file.c_str(), 1);
  }
  ~CollectorScenario() { std::filesystem::remove(file); }  // releases any call still hung in the fake
  void write(const std::string& scenario_json) {
    auto tmp = dir / "nvml.json.tmp";
    std::ofstream(tmp) << scenario_json;
    std::filesystem::rename(tmp, file);
  }
};
const CheckResult* find(const std::vector<CheckResult>& rs, const std::string& check) {
  for (const auto& r : rs)
    if (r.check == check) return &r;
  return nullptr;
}
}  // namespace

TEST(NvmlCollector, ReadsEveryGpuOfTheFake) {
  CollectorScenario s;
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  ASSERT_TRUE(fleet.nvml_loaded) << fleet.load_error;
  EXPECT_EQ(fleet.driver_version, "570.86.15");
  ASSERT_EQ(fleet.gpus.size(), 8u);
  const auto& g = fleet.gpus[0];
  EXPECT_EQ(g.bus_id, "00000000:18:00.0");
  EXPECT_FALSE(g.uuid.empty());
  EXPECT_EQ(g.pcie_width, 16u);
  ASSERT_TRUE(g.row_remap);
  EXPECT_EQ(g.nvlinks.size(), 18u);
  EXPECT_EQ(g.recovery_action, 0u);
  EXPECT_EQ(g.processes, std::vector<unsigned>{});  // looked, and found none
  EXPECT_TRUE(fleet.missing_symbols.empty());
}

TEST(NvmlCollector, AnOlderDriverLosesOnlyWhatItLacks) {
  CollectorScenario s(R"({"devices":[{"clock_reasons": 8, "processes": [77, 12]}]})");
  NvmlCollector c(FAKE_NVML_OLD_PATH);
  auto fleet = c.collect();
  ASSERT_TRUE(fleet.nvml_loaded);
  ASSERT_EQ(fleet.gpus.size(), 1u);
  EXPECT_EQ(fleet.gpus[0].clock_event_reasons, 8u);  // through the older ClocksThrottleReasons name
  EXPECT_EQ(fleet.gpus[0].processes, (std::vector<unsigned>{12, 77}));  // through ..._v2
  EXPECT_FALSE(fleet.gpus[0].recovery_action);
  ASSERT_EQ(fleet.missing_symbols.size(), 1u);
  EXPECT_EQ(fleet.missing_symbols[0].text(), "nvmlDeviceGetFieldValues (GPU recovery action)");
  auto r = judge_gpu_recovery(fleet);
  EXPECT_NE(r.message.find("not checked"), std::string::npos) << r.message;
}

TEST(NvmlCollector, NoDriverIsNotLoadedWithTheReason) {
  CollectorScenario s;
  std::filesystem::remove(s.file);
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  EXPECT_FALSE(fleet.nvml_loaded);
  EXPECT_NE(fleet.load_error.find("nvmlInit"), std::string::npos) << fleet.load_error;
  NvmlCollector nothing("/nonexistent/libnvidia-ml.so.1");
  EXPECT_NE(nothing.collect().load_error.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(NvmlCollector, ALostGpuIsMarkedAndTheOthersRead) {
  CollectorScenario s(R"({"devices":[{}, {"lost": true}, {}]})");
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  ASSERT_EQ(fleet.gpus.size(), 3u);
  EXPECT_FALSE(fleet.gpus[0].lost);
  EXPECT_TRUE(fleet.gpus[1].lost);
  EXPECT_TRUE(fleet.gpus[2].temperature_c);
}

TEST(NvmlCollector, UtilizationAndTheProcessesOnEachGpuReachTheCheckResult) {
  CollectorScenario s(R"({"devices":[{"utilization": 97, "processes": [4242]}, {"utilization": 0, "processes": [4343]}]})");
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  ASSERT_EQ(fleet.gpus.size(), 2u);
  EXPECT_EQ(fleet.gpus[0].utilization_pct, 97u);
  EXPECT_EQ(fleet.gpus[1].utilization_pct, 0u);
  s.write(R"({"devices":[{}], "fail": {"nvmlDeviceGetUtilizationRates": 999}})");
  auto unknown = NvmlCollector(FAKE_NVML_PATH).collect();
  EXPECT_FALSE(unknown.gpus[0].utilization_pct) << "not read is not 0%";
}

std::string pids_json(unsigned n) {
  std::string s = "[";
  for (unsigned i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(1000 + i);
  return s + "]";
}

TEST(NvmlCollector, ReportsTheProcessesUsingEachGpu) {
  // Compute and graphics contexts together, sorted, each pid once.
  CollectorScenario s(R"({"devices":[{"processes": [5678, 1234]}, {}, {"processes": [42], "graphics_processes": [42, 7]},
                            {"lost": true}]})");
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  ASSERT_EQ(fleet.gpus.size(), 4u);
  EXPECT_EQ(fleet.gpus[0].processes, (std::vector<unsigned>{1234, 5678}));
  ASSERT_TRUE(fleet.gpus[1].processes);
  EXPECT_TRUE(fleet.gpus[1].processes->empty());
  EXPECT_EQ(fleet.gpus[2].processes, (std::vector<unsigned>{7, 42}));
  EXPECT_FALSE(fleet.gpus[3].processes);  // lost: could not look
  EXPECT_TRUE(fleet.gpus[0].errors.empty());

  // A new list on the next collect, with the same loaded library.
  s.write(R"({"devices":[{}, {"processes": [9]}]})");
  fleet = c.collect();
  ASSERT_EQ(fleet.gpus.size(), 2u);
  EXPECT_EQ(fleet.gpus[0].processes, std::vector<unsigned>{});
  EXPECT_EQ(fleet.gpus[1].processes, std::vector<unsigned>{9});
}

TEST(NvmlCollector, MoreProcessesThanItReadsIsUnknownNotAPartialList) {
  CollectorScenario s(R"({"devices":[{"processes": )" + pids_json(256) + R"(}, {"processes": )" + pids_json(300) + "}]}");
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  ASSERT_EQ(fleet.gpus.size(), 2u);
  ASSERT_TRUE(fleet.gpus[0].processes);  // 256 is still read whole
  EXPECT_EQ(fleet.gpus[0].processes->size(), 256u);
  EXPECT_EQ(fleet.gpus[0].processes->back(), 1255u);
  EXPECT_FALSE(fleet.gpus[1].processes);
  ASSERT_TRUE(fleet.gpus[1].errors.contains("nvmlDeviceGetComputeRunningProcesses"));
  EXPECT_NE(fleet.gpus[1].errors.at("nvmlDeviceGetComputeRunningProcesses").find("300 processes"), std::string::npos)
      << fleet.gpus[1].errors.at("nvmlDeviceGetComputeRunningProcesses");
}

TEST(NvmlCollector, AFailedProcessQueryIsUnknownButUnsupportedGraphicsIsNot) {
  CollectorScenario s(R"({"devices":[{"processes": [1]}], "fail": {"nvmlDeviceGetComputeRunningProcesses_v3": 999}})");
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  ASSERT_EQ(fleet.gpus.size(), 1u);
  EXPECT_FALSE(fleet.gpus[0].processes);
  EXPECT_TRUE(fleet.gpus[0].errors.contains("nvmlDeviceGetComputeRunningProcesses"));

  // Graphics failing for a reason worth telling: the compute list alone may miss a process.
  s.write(R"({"devices":[{"processes": [1]}], "fail": {"nvmlDeviceGetGraphicsRunningProcesses_v3": 999}})");
  fleet = c.collect();
  EXPECT_FALSE(fleet.gpus.at(0).processes);
  EXPECT_TRUE(fleet.gpus[0].errors.contains("nvmlDeviceGetGraphicsRunningProcesses"));

  // A device without graphics process accounting: the compute list is the answer.
  s.write(R"({"devices":[{"processes": [1]}], "fail": {"nvmlDeviceGetGraphicsRunningProcesses_v3": 3}})");
  fleet = c.collect();
  EXPECT_EQ(fleet.gpus.at(0).processes, std::vector<unsigned>{1});
  EXPECT_TRUE(fleet.gpus[0].errors.empty());
}

TEST(NvmlCollector, CollectsOneGpuByEitherFormOfItsBusId) {
  CollectorScenario s(R"({"devices":[{"processes": [11]}, {"lost": true},
                            {"bus_id": "00000000:3B:00.0", "processes": [5678, 1234], "persistence": false}]})");
  for (const std::string address : {"00000000:3B:00.0", "0000:3b:00", "0000:3B:00.0"}) {
    auto gpu = collect_one_gpu(FAKE_NVML_PATH, address);
    ASSERT_TRUE(gpu) << address << ": " << gpu.error();
    EXPECT_EQ(gpu->index, 2u) << address;
    EXPECT_EQ(gpu->bus_id, "00000000:3B:00.0");
    EXPECT_EQ(gpu->persistence_mode, false);
    EXPECT_EQ(gpu->processes, (std::vector<unsigned>{1234, 5678}));
  }
  auto first = collect_one_gpu(FAKE_NVML_PATH, "0000:18:00");
  ASSERT_TRUE(first) << first.error();
  EXPECT_EQ(first->index, 0u);
  EXPECT_EQ(first->processes, std::vector<unsigned>{11});

  // An address no GPU has: the error names it, the GPUs NVML has, and the one that did not answer.
  auto unknown = collect_one_gpu(FAKE_NVML_PATH, "0000:99:00");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("0000:99:00"), std::string::npos) << unknown.error();
  EXPECT_NE(unknown.error().find("0000:3b:00"), std::string::npos) << unknown.error();
  EXPECT_NE(unknown.error().find("GPU 1: GPU is lost"), std::string::npos) << unknown.error();
  EXPECT_FALSE(collect_one_gpu(FAKE_NVML_PATH, ""));

  // The same through a collector the caller keeps (the GPU check's own code path).
  NvmlCollector c(FAKE_NVML_PATH);
  auto kept = c.collect_gpu("0000:3b:00");
  ASSERT_TRUE(kept) << kept.error();
  EXPECT_EQ(kept->index, 2u);
  EXPECT_EQ(c.collect().gpus.size(), 3u);
  EXPECT_TRUE(c.current_call().empty());
}

TEST(NvmlCollector, CollectOneGpuSaysWhyNvmlDidNotLoad) {
  auto missing = collect_one_gpu("/nonexistent/libnvidia-ml.so.1", "0000:18:00");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << missing.error();
  CollectorScenario s;
  std::filesystem::remove(s.file);  // no driver
  auto no_driver = collect_one_gpu(FAKE_NVML_PATH, "0000:18:00");
  ASSERT_FALSE(no_driver);
  EXPECT_NE(no_driver.error().find("nvmlInit"), std::string::npos) << no_driver.error();
}

TEST(NvmlCollector, AnOlderDriverStillFindsOneGpuAndItsProcesses) {
  CollectorScenario s(R"({"devices":[{}, {"processes": [31]}]})");
  auto gpu = collect_one_gpu(FAKE_NVML_OLD_PATH, "00000000:28:00.0");
  ASSERT_TRUE(gpu) << gpu.error();
  EXPECT_EQ(gpu->index, 1u);
  EXPECT_EQ(gpu->processes, std::vector<unsigned>{31});
}

TEST(GpuCheck, FaultsInTheScenarioBecomeVerdictsNamingTheGpu) {
  CollectorScenario s(R"({"devices":[{}, {"remap": {"pending": true}}, {"pcie": {"width": 4}}]})");
  GpuThresholds t;
  t.expected_count = 4;
  GpuCheck check(FAKE_NVML_PATH, t, 5s);
  auto rs = check.run();
  ASSERT_TRUE(find(rs, "gpu.count"));
  EXPECT_EQ(find(rs, "gpu.count")->code, "GPU-COUNT");
  EXPECT_EQ(find(rs, "gpu.memory")->code, "GPU-ROW-REMAP-PENDING");
  EXPECT_NE(find(rs, "gpu.memory")->message.find("GPU 1 (00000000:28:00.0"), std::string::npos)
      << find(rs, "gpu.memory")->message;
  EXPECT_EQ(find(rs, "gpu.pcie")->code, "GPU-PCIE-WIDTH");
  EXPECT_EQ(find(rs, "gpu.nvml")->status, Status::ok);
}

TEST(GpuCheck, AHungNvmlCallIsAVerdictWithinTheDeadline) {
  CollectorScenario s(R"({"devices":[{}, {}], "hang": ["nvmlDeviceGetTemperature"]})");
  GpuCheck check(FAKE_NVML_PATH, {}, 300ms);
  auto t0 = std::chrono::steady_clock::now();
  auto rs = check.run();
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 3s);  // the deadline is 300 ms; generous for a loaded machine
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, Status::fault);
  EXPECT_EQ(rs[0].code, "GPU-NVML-HANG");
  EXPECT_NE(rs[0].message.find("nvmlDeviceGetTemperature (GPU 0)"), std::string::npos) << rs[0].message;
  // Still stuck: answered at once, no second call piled on the first.
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(check.run().at(0).code, "GPU-NVML-HANG");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);
  // Released: the next run reads the GPUs again.
  s.write(R"({"devices":[{}, {}]})");
  std::vector<CheckResult> again;
  for (int i = 0; i < 100; ++i) {
    again = check.run();
    if (again.at(0).code != "GPU-NVML-HANG") break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(find(again, "gpu.nvml")->status, Status::ok);
  EXPECT_EQ(find(again, "gpu.temperature")->status, Status::ok);
}

TEST(NvmlEventWatcher, DeliversNewXidsWithTheGpusAddress) {
  CollectorScenario s(R"({"devices":[{}, {}], "events": [{"id": 1, "gpu": 0, "type": "xid", "xid": 13}]})");
  std::mutex m;
  std::vector<NvmlEvent> seen;
  NvmlEventWatcher w(FAKE_NVML_PATH, [&](const NvmlEvent& e) {
    std::lock_guard lock(m);
    seen.push_back(e);
  });
  w.start();
  // Let the watcher register before the new event appears (old ids are never delivered).
  for (int i = 0; i < 100 && !w.problem().empty(); ++i) std::this_thread::sleep_for(20ms);
  std::this_thread::sleep_for(300ms);
  s.write(R"({"devices":[{}, {}], "events": [{"id": 1, "gpu": 0, "type": "xid", "xid": 13},
                                            {"id": 2, "gpu": 1, "type": "xid", "xid": 79},
                                            {"id": 3, "gpu": 0, "type": "dbe"}]})");
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard lock(m);
      if (seen.size() >= 2) break;
    }
    std::this_thread::sleep_for(25ms);
  }
  w.stop();
  std::lock_guard lock(m);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].xid, 79u);
  EXPECT_EQ(seen[0].bus_id, "00000000:28:00.0");
  EXPECT_TRUE(seen[1].double_bit_ecc);
  EXPECT_EQ(seen[1].xid, 48u);
}
