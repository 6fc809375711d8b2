// The fake NVML (tests/fakes) as healthd will meet it: loaded with dlopen by path, symbols resolved one
// by one, answers driven by a scenario file rewritten while it is loaded. The daemon's NVML tests rely
// on every behaviour checked here.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/nvml/nvml_api.hpp"
#include "temp_dir.hpp"

using namespace std::chrono_literals;
namespace nvml = ar::healthd::nvml;

namespace {

// The entry points, resolved as the daemon resolves them (a missing one stays null).
struct Api {
  void* lib = nullptr;
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DriverVersionFn driver_version = nullptr;
  nvml::DeviceCountFn count = nullptr;
  nvml::HandleByIndexFn handle = nullptr;
  nvml::StringFn name = nullptr;
  nvml::StringFn uuid = nullptr;
  nvml::PciInfoFn pci = nullptr;
  nvml::TotalEccFn ecc = nullptr;
  nvml::RetiredPagesFn retired_pages = nullptr;
  nvml::EnableStateFn pages_pending = nullptr;
  nvml::RemappedRowsFn remapped_rows = nullptr;
  nvml::ClockReasonsFn clock_event_reasons = nullptr;
  nvml::ClockReasonsFn clock_throttle_reasons = nullptr;
  nvml::UintFn pcie_gen = nullptr;
  nvml::UintFn pcie_max_gen = nullptr;
  nvml::UintFn pcie_width = nullptr;
  nvml::UintFn pcie_max_width = nullptr;
  nvml::TemperatureFn temperature = nullptr;
  nvml::UintFn power = nullptr;
  nvml::UintFn power_limit = nullptr;
  nvml::EnableStateFn persistence = nullptr;
  nvml::NvLinkStateFn nvlink_state = nullptr;
  nvml::NvLinkErrorFn nvlink_errors = nullptr;
  nvml::FieldValuesFn field_values = nullptr;
  nvml::EventSetCreateFn event_set_create = nullptr;
  nvml::SupportedEventsFn supported_events = nullptr;
  nvml::RegisterEventsFn register_events = nullptr;
  nvml::EventSetWaitFn event_wait_v2 = nullptr;
  nvml::EventSetWaitFn event_wait = nullptr;
  nvml::EventSetFreeFn event_set_free = nullptr;
  nvml::RunningProcessesFn compute_processes_v3 = nullptr;
  nvml::RunningProcessesFn compute_processes_v2 = nullptr;
  nvml::RunningProcessesV1Fn compute_processes_v1 = nullptr;
  nvml::RunningProcessesFn graphics_processes_v3 = nullptr;
  nvml::RunningProcessesFn graphics_processes_v2 = nullptr;
  nvml::RunningProcessesV1Fn graphics_processes_v1 = nullptr;

  explicit Api(const char* path) : lib(::dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (lib == nullptr) return;
    resolve(init, "nvmlInit_v2");
    resolve(shutdown, "nvmlShutdown");
    resolve(error_string, "nvmlErrorString");
    resolve(driver_version, "nvmlSystemGetDriverVersion");
    resolve(count, "nvmlDeviceGetCount_v2");
    resolve(handle, "nvmlDeviceGetHandleByIndex_v2");
    resolve(name, "nvmlDeviceGetName");
    resolve(uuid, "nvmlDeviceGetUUID");
    resolve(pci, "nvmlDeviceGetPciInfo_v3");
    resolve(ecc, "nvmlDeviceGetTotalEccErrors");
    resolve(retired_pages, "nvmlDeviceGetRetiredPages");
    resolve(pages_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
    resolve(remapped_rows, "nvmlDeviceGetRemappedRows");
    resolve(clock_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    resolve(clock_throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    resolve(pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    resolve(pcie_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
    resolve(pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
    resolve(pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    resolve(temperature, "nvmlDeviceGetTemperature");
    resolve(power, "nvmlDeviceGetPowerUsage");
    resolve(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    resolve(persistence, "nvmlDeviceGetPersistenceMode");
    resolve(nvlink_state, "nvmlDeviceGetNvLinkState");
    resolve(nvlink_errors, "nvmlDeviceGetNvLinkErrorCounter");
    resolve(field_values, "nvmlDeviceGetFieldValues");
    resolve(event_set_create, "nvmlEventSetCreate");
    resolve(supported_events, "nvmlDeviceGetSupportedEventTypes");
    resolve(register_events, "nvmlDeviceRegisterEvents");
    resolve(event_wait_v2, "nvmlEventSetWait_v2");
    resolve(event_wait, "nvmlEventSetWait");
    resolve(event_set_free, "nvmlEventSetFree");
    resolve(compute_processes_v3, "nvmlDeviceGetComputeRunningProcesses_v3");
    resolve(compute_processes_v2, "nvmlDeviceGetComputeRunningProcesses_v2");
    resolve(compute_processes_v1, "nvmlDeviceGetComputeRunningProcesses");
    resolve(graphics_processes_v3, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    resolve(graphics_processes_v2, "nvmlDeviceGetGraphicsRunningProcesses_v2");
    resolve(graphics_processes_v1, "nvmlDeviceGetGraphicsRunningProcesses");
  }
  ~Api() {
    if (lib != nullptr) ::dlclose(lib);
  }
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // Everything the full library must export (the old one lacks the five newer names).
  bool complete() const {
    return init && shutdown && error_string && driver_version && count && handle && name && uuid && pci && ecc &&
           retired_pages && pages_pending && remapped_rows && clock_event_reasons && clock_throttle_reasons &&
           pcie_gen && pcie_max_gen && pcie_width && pcie_max_width && temperature && power && power_limit &&
           persistence && nvlink_state && nvlink_errors && field_values && event_set_create && supported_events &&
           register_events && event_wait_v2 && event_wait && event_set_free && compute_processes_v3 &&
           compute_processes_v2 && compute_processes_v1 && graphics_processes_v3 && graphics_processes_v2 &&
           graphics_processes_v1;
  }

  nvmlDevice_t device(unsigned index) const {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(handle(index, &d), NVML_SUCCESS) << "handle of device " << index;
    return d;
  }

 private:
  template <class Fn>
  void resolve(Fn& fn, const char* symbol) {
    fn = reinterpret_cast<Fn>(::dlsym(lib, symbol));
  }
};

// Each test has its own scenario file in its own directory, named by the variable the fake reads.
class FakeNvmlScenario : public ::testing::Test {
 protected:
  ar::test::TempDir dir;
  std::filesystem::path scenario = dir / "scenario.json";

  void SetUp() override { ::setenv("FAKE_NVML_SCENARIO", scenario.c_str(), 1); }
  void TearDown() override { ::unsetenv("FAKE_NVML_SCENARIO"); }

  // By rename, so the fake never reads a half-written file and always sees a new version.
  void write(std::string_view json) {
    const auto tmp = dir / "scenario.json.tmp";
    std::ofstream(tmp) << json;
    std::filesystem::rename(tmp, scenario);
  }
};

class FakeNvml : public FakeNvmlScenario {
 protected:
  Api nvml{FAKE_NVML_PATH};
  void SetUp() override {
    FakeNvmlScenario::SetUp();
    ASSERT_NE(nvml.lib, nullptr) << ::dlerror();
    ASSERT_TRUE(nvml.complete());
  }
};

// The old-driver variant, loaded by the test itself.
using FakeNvmlOld = FakeNvmlScenario;

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace

TEST_F(FakeNvml, WithoutAScenarioThereIsNoDriver) {
  ::unsetenv("FAKE_NVML_SCENARIO");
  EXPECT_EQ(nvml.init(), NVML_ERROR_DRIVER_NOT_LOADED);
  ::setenv("FAKE_NVML_SCENARIO", scenario.c_str(), 1);  // set, but the file does not exist
  EXPECT_EQ(nvml.init(), NVML_ERROR_DRIVER_NOT_LOADED);
  unsigned count = 0;
  EXPECT_EQ(nvml.count(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvml, AnEmptyScenarioIsAHealthyEightGpuNode) {
  write("{}");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  ASSERT_EQ(nvml.driver_version(text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, "570.86.15");
  unsigned count = 0;
  ASSERT_EQ(nvml.count(&count), NVML_SUCCESS);
  ASSERT_EQ(count, 8u);

  nvmlDevice_t d0 = nvml.device(0);
  EXPECT_NE(d0, nvml.device(7));
  EXPECT_EQ(d0, nvml.device(0));  // stable handles
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(nvml.handle(8, &none), NVML_ERROR_INVALID_ARGUMENT);

  ASSERT_EQ(nvml.name(d0, text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(nvml.name(d0, text, 4), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(nvml.uuid(d0, text, sizeof text), NVML_SUCCESS);
  const std::string uuid0 = text;
  EXPECT_TRUE(uuid0.starts_with("GPU-"));
  ASSERT_EQ(nvml.uuid(nvml.device(1), text, sizeof text), NVML_SUCCESS);
  EXPECT_NE(uuid0, text);

  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvml.pci(d0, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:18:00.0");
  EXPECT_EQ(pci.bus, 0x18u);
  ASSERT_EQ(nvml.pci(nvml.device(1), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:28:00.0");

  unsigned long long ull = 1;
  EXPECT_EQ(nvml.ecc(d0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull), NVML_SUCCESS);
  EXPECT_EQ(ull, 0u);
  unsigned pages = 0;
  EXPECT_EQ(nvml.retired_pages(d0, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, nullptr), NVML_SUCCESS);
  EXPECT_EQ(pages, 0u);
  nvmlEnableState_t state = NVML_FEATURE_ENABLED;
  EXPECT_EQ(nvml.pages_pending(d0, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_DISABLED);
  unsigned corr = 1, unc = 1, pending = 1, failure = 1;
  EXPECT_EQ(nvml.remapped_rows(d0, &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(corr + unc + pending + failure, 0u);
  EXPECT_EQ(nvml.clock_event_reasons(d0, &ull), NVML_SUCCESS);
  EXPECT_EQ(ull, 0u);

  unsigned value = 0;
  EXPECT_EQ(nvml.pcie_gen(d0, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 5u);
  EXPECT_EQ(nvml.pcie_max_width(d0, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 16u);
  EXPECT_EQ(nvml.temperature(d0, NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 40u);
  EXPECT_EQ(nvml.power(d0, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 100000u);
  EXPECT_EQ(nvml.power_limit(d0, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 700000u);
  EXPECT_EQ(nvml.persistence(d0, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_ENABLED);

  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    state = NVML_FEATURE_DISABLED;
    EXPECT_EQ(nvml.nvlink_state(d0, link, &state), NVML_SUCCESS) << link;
    EXPECT_EQ(state, NVML_FEATURE_ENABLED) << link;
  }
  EXPECT_EQ(nvml.nvlink_state(d0, NVML_NVLINK_MAX_LINKS, &state), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvlink_errors(d0, 3, NVML_NVLINK_ERROR_DL_CRC_FLIT, &ull), NVML_SUCCESS);
  EXPECT_EQ(ull, 0u);

  nvmlFieldValue_t fields[2]{};
  fields[0].fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
  fields[1].fieldId = 1;  // any other field
  ASSERT_EQ(nvml.field_values(d0, 2, fields), NVML_SUCCESS);
  EXPECT_EQ(fields[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(fields[0].value.uiVal, NVML_GPU_RECOVERY_ACTION_NONE);
  EXPECT_EQ(fields[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);

  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml.count(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvml, ErrorStringsAreReadable) {
  EXPECT_STREQ(nvml.error_string(NVML_SUCCESS), "Success");
  EXPECT_STREQ(nvml.error_string(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
  EXPECT_STREQ(nvml.error_string(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_STREQ(nvml.error_string(NVML_ERROR_TIMEOUT), "Timeout");
  EXPECT_STREQ(nvml.error_string(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
  EXPECT_STREQ(nvml.error_string(12345), "Unknown Error");
}

TEST_F(FakeNvml, ARewrittenScenarioIsSeenWithoutRestart) {
  write(R"({"devices": [{"temperature": 41}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  unsigned value = 0;
  ASSERT_EQ(nvml.temperature(d0, NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 41u);

  write(R"({"devices": [{"temperature": 95, "ecc": {"volatile_uncorrected": 2}}, {}],
            "driver_version": "535.0"})");
  ASSERT_EQ(nvml.temperature(d0, NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);  // the old handle still works
  EXPECT_EQ(value, 95u);
  unsigned long long errors = 0;
  EXPECT_EQ(nvml.ecc(d0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &errors), NVML_SUCCESS);
  EXPECT_EQ(errors, 2u);
  ASSERT_EQ(nvml.count(&value), NVML_SUCCESS);
  EXPECT_EQ(value, 2u);
  char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  ASSERT_EQ(nvml.driver_version(text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, "535.0");
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, ABrokenRewriteKeepsTheLastGoodScenario) {
  write(R"({"devices": [{"temperature": 50}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  write(R"({"devices": [{"temprature": 90}]})");  // misspelt: rejected, not silently defaulted
  unsigned value = 0;
  ASSERT_EQ(nvml.temperature(nvml.device(0), NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 50u);
  write(R"({"devices": [{"temperature": 60}]})");
  ASSERT_EQ(nvml.temperature(nvml.device(0), NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 60u);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, FailEntriesAndInitErrorReturnTheirCodes) {
  write(R"({"init_error": 4})");
  EXPECT_EQ(nvml.init(), NVML_ERROR_NO_PERMISSION);
  unsigned count = 0;
  EXPECT_EQ(nvml.count(&count), NVML_ERROR_UNINITIALIZED);

  write(R"({"fail": {"nvmlDeviceGetNvLinkState": 3, "nvmlDeviceGetPowerUsage": 999}})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  nvmlEnableState_t state{};
  EXPECT_EQ(nvml.nvlink_state(d0, 0, &state), NVML_ERROR_NOT_SUPPORTED);
  unsigned value = 0;
  EXPECT_EQ(nvml.power(d0, &value), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(nvml.temperature(d0, NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);  // unlisted calls unaffected
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, ALostDeviceAnswersGpuIsLost) {
  write(R"({"devices": [{}, {}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  nvmlDevice_t d1 = nvml.device(1);

  write(R"({"devices": [{}, {"lost": true}]})");
  char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned value = 0;
  EXPECT_EQ(nvml.name(d1, text, sizeof text), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.temperature(d1, NVML_TEMPERATURE_GPU, &value), NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t again = nullptr;
  EXPECT_EQ(nvml.handle(1, &again), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.name(d0, text, sizeof text), NVML_SUCCESS);

  write(R"({"devices": [{}]})");  // gone from the list altogether
  EXPECT_EQ(nvml.name(d1, text, sizeof text), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, RetiredPagesCountIsInAndOut) {
  write(R"({"devices": [{"retired_pages": {"sbe": 3, "dbe": 1, "pending": true}}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  unsigned pages = 0;
  EXPECT_EQ(nvml.retired_pages(d0, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &pages, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(pages, 3u);
  unsigned long long addresses[4] = {7, 7, 7, 7};
  pages = 4;
  EXPECT_EQ(nvml.retired_pages(d0, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &pages, addresses),
            NVML_SUCCESS);
  EXPECT_EQ(pages, 3u);
  EXPECT_EQ(addresses[2], 0u);
  EXPECT_EQ(addresses[3], 7u);  // past the count: untouched
  pages = 4;
  EXPECT_EQ(nvml.retired_pages(d0, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, addresses), NVML_SUCCESS);
  EXPECT_EQ(pages, 1u);
  nvmlEnableState_t state{};
  EXPECT_EQ(nvml.pages_pending(d0, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_ENABLED);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, NvLinksPastTheListAreNotSupported) {
  write(R"({"devices": [{"nvlink": [{"active": false, "replay": 7}]}, {"nvlink": null}, {"nvlink": []}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  nvmlEnableState_t state = NVML_FEATURE_ENABLED;
  EXPECT_EQ(nvml.nvlink_state(d0, 0, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_DISABLED);
  unsigned long long replay = 0;
  EXPECT_EQ(nvml.nvlink_errors(d0, 0, NVML_NVLINK_ERROR_DL_REPLAY, &replay), NVML_SUCCESS);
  EXPECT_EQ(replay, 7u);
  EXPECT_EQ(nvml.nvlink_state(d0, 1, &state), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvlink_state(nvml.device(1), 0, &state), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvlink_state(nvml.device(2), 0, &state), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, RunningProcessesCountIsInAndOut) {
  write(R"({"devices": [{"processes": [1234, 5678], "graphics_processes": [99]}, {}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  // No room: the count, and "insufficient size" because there are some.
  unsigned count = 0;
  EXPECT_EQ(nvml.compute_processes_v3(d0, &count, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
  nvmlProcessInfo_t infos[4]{};
  infos[2].pid = 7;
  count = 1;
  EXPECT_EQ(nvml.compute_processes_v3(d0, &count, infos), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
  count = 4;
  ASSERT_EQ(nvml.compute_processes_v3(d0, &count, infos), NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(infos[0].pid, 1234u);
  EXPECT_EQ(infos[1].pid, 5678u);
  EXPECT_GT(infos[1].usedGpuMemory, 0u);
  EXPECT_EQ(infos[1].gpuInstanceId, 0xFFFFFFFFu);  // not MIG
  EXPECT_EQ(infos[1].computeInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(infos[2].pid, 7u);  // past the count: untouched
  count = 4;
  ASSERT_EQ(nvml.compute_processes_v2(d0, &count, infos), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  // The unsuffixed entry point writes the two-field v1 layout: the second pid sits 16 bytes in.
  nvmlProcessInfo_v1_t v1[3]{};
  count = 3;
  ASSERT_EQ(nvml.compute_processes_v1(d0, &count, v1), NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(v1[0].pid, 1234u);
  EXPECT_EQ(v1[1].pid, 5678u);
  EXPECT_EQ(v1[2].pid, 0u);
  count = 4;
  ASSERT_EQ(nvml.graphics_processes_v3(d0, &count, infos), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(infos[0].pid, 99u);
  // None: success with a count of 0, no buffer needed.
  count = 0;
  EXPECT_EQ(nvml.compute_processes_v3(nvml.device(1), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(nvml.graphics_processes_v1(nvml.device(1), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(nvml.compute_processes_v3(d0, nullptr, infos), NVML_ERROR_INVALID_ARGUMENT);

  write(R"({"devices": [{"processes": [1], "lost": true}],
            "fail": {"nvmlDeviceGetComputeRunningProcesses_v2": 999}})");
  EXPECT_EQ(nvml.compute_processes_v3(d0, &count, nullptr), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.compute_processes_v2(d0, &count, nullptr), NVML_ERROR_UNKNOWN);  // "fail" is per name
  write(R"({"devices": [{"processes": "1234"}]})");  // rejected: the last good scenario stays
  count = 0;
  EXPECT_EQ(nvml.compute_processes_v3(d0, &count, nullptr), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, AHangingCallReturnsOnceItsEntryIsRemoved) {
  write(R"({"hang": ["nvmlDeviceGetTemperature"], "devices": [{"temperature": 77}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);

  std::atomic<bool> done = false;
  nvmlReturn_t rc = NVML_ERROR_UNKNOWN;
  unsigned value = 0;
  std::thread caller([&] {
    rc = nvml.temperature(d0, NVML_TEMPERATURE_GPU, &value);
    done = true;
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(done);
  // Other calls go on meanwhile: the hang holds no lock.
  unsigned power = 0;
  EXPECT_EQ(nvml.power(d0, &power), NVML_SUCCESS);

  write(R"({"devices": [{"temperature": 77}]})");
  const bool returned = eventually([&] { return done.load(); }, 10s);
  EXPECT_TRUE(returned);
  if (!returned) std::filesystem::remove(scenario);  // no scenario ends every hang: never leave it running
  caller.join();
  if (returned) {
    EXPECT_EQ(rc, NVML_SUCCESS);
    EXPECT_EQ(value, 77u);
  }
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, EventsAreDeliveredOnceAndOnlyIfNew) {
  write(R"({"devices": [{}, {}], "events": [{"id": 1, "gpu": 0, "type": "xid", "xid": 48}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  nvmlDevice_t d1 = nvml.device(1);
  unsigned long long supported = 0;
  ASSERT_EQ(nvml.supported_events(d0, &supported), NVML_SUCCESS);
  EXPECT_NE(supported & nvmlEventTypeXidCriticalError, 0u);

  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml.event_set_create(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml.register_events(d0, nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError, set),
            NVML_SUCCESS);
  nvmlEventData_t data{};
  EXPECT_EQ(nvml.event_wait_v2(set, &data, 100), NVML_ERROR_TIMEOUT);  // id 1 predates the set

  write(R"({"devices": [{}, {}], "events": [
              {"id": 1, "gpu": 0, "type": "xid", "xid": 48},
              {"id": 2, "gpu": 0, "type": "xid", "xid": 79},
              {"id": 3, "gpu": 1, "type": "dbe"},
              {"id": 4, "gpu": 0, "type": "dbe"}]})");
  ASSERT_EQ(nvml.event_wait_v2(set, &data, 1000), NVML_SUCCESS);
  EXPECT_EQ(data.device, d0);
  EXPECT_EQ(data.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(data.eventData, 79u);
  ASSERT_EQ(nvml.event_wait(set, &data, 1000), NVML_SUCCESS);  // v1 shares the set's memory
  EXPECT_EQ(data.device, d0);
  EXPECT_EQ(data.eventType, nvmlEventTypeDoubleBitEccError);
  EXPECT_EQ(nvml.event_wait_v2(set, &data, 100), NVML_ERROR_TIMEOUT);  // id 3 is for an unregistered GPU

  // A set created now (a restarted daemon) sees none of them.
  nvmlEventSet_t later = nullptr;
  ASSERT_EQ(nvml.event_set_create(&later), NVML_SUCCESS);
  ASSERT_EQ(nvml.register_events(d1, nvmlEventTypeDoubleBitEccError, later), NVML_SUCCESS);
  EXPECT_EQ(nvml.event_wait_v2(later, &data, 100), NVML_ERROR_TIMEOUT);

  // Registering the GPU afterwards still gets the new event that was waiting for it.
  ASSERT_EQ(nvml.register_events(d1, nvmlEventTypeDoubleBitEccError, set), NVML_SUCCESS);
  ASSERT_EQ(nvml.event_wait_v2(set, &data, 1000), NVML_SUCCESS);
  EXPECT_EQ(data.device, d1);
  EXPECT_EQ(nvml.event_wait_v2(set, &data, 0), NVML_ERROR_TIMEOUT);

  EXPECT_EQ(nvml.event_set_free(later), NVML_SUCCESS);
  EXPECT_EQ(nvml.event_set_free(set), NVML_SUCCESS);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvml, AnEventWrittenDuringAWaitEndsIt) {
  write(R"({"devices": [{}]})");
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = nvml.device(0);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml.event_set_create(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml.register_events(d0, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  std::thread writer([&] {
    std::this_thread::sleep_for(200ms);
    write(R"({"devices": [{}], "events": [{"id": 9, "gpu": 0, "type": "xid", "xid": 94}]})");
  });
  nvmlEventData_t data{};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(nvml.event_wait_v2(set, &data, 20000), NVML_SUCCESS);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(data.eventData, 94u);
  writer.join();
  EXPECT_EQ(nvml.event_set_free(set), NVML_SUCCESS);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
}

TEST_F(FakeNvmlOld, TheOldDriverLacksTheNewerNamesButHasTheirFallbacks) {
  Api old{FAKE_NVML_OLD_PATH};
  ASSERT_NE(old.lib, nullptr) << ::dlerror();
  EXPECT_EQ(old.clock_event_reasons, nullptr);
  EXPECT_EQ(old.field_values, nullptr);
  EXPECT_EQ(old.event_wait_v2, nullptr);
  EXPECT_EQ(old.compute_processes_v3, nullptr);
  EXPECT_EQ(old.graphics_processes_v3, nullptr);
  ASSERT_NE(old.clock_throttle_reasons, nullptr);
  ASSERT_NE(old.event_wait, nullptr);
  ASSERT_NE(old.compute_processes_v2, nullptr);
  ASSERT_NE(old.graphics_processes_v2, nullptr);
  ASSERT_NE(old.init, nullptr);

  write(R"({"devices": [{"clock_reasons": 8, "processes": [4321]}]})");
  ASSERT_EQ(old.init(), NVML_SUCCESS);
  nvmlDevice_t d0 = old.device(0);
  unsigned long long reasons = 0;
  EXPECT_EQ(old.clock_throttle_reasons(d0, &reasons), NVML_SUCCESS);
  EXPECT_EQ(reasons, nvmlClocksThrottleReasonHwSlowdown);
  nvmlProcessInfo_t infos[2]{};
  unsigned count = 2;
  ASSERT_EQ(old.compute_processes_v2(d0, &count, infos), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(infos[0].pid, 4321u);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(old.event_set_create(&set), NVML_SUCCESS);
  nvmlEventData_t data{};
  EXPECT_EQ(old.event_wait(set, &data, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(old.event_set_free(set), NVML_SUCCESS);
  EXPECT_EQ(old.shutdown(), NVML_SUCCESS);
}
