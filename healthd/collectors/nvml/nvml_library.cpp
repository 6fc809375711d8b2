#include "nvml_library.hpp"

#include <dlfcn.h>

#include <initializer_list>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

// Resolves the entry points of one library: each the first of its names the library has, or none;
// a missing one is listed with what it disables, and (for the tests against NVIDIA's own builds)
// every entry point asked for is recorded with the name it took.
struct Resolver {
  void* handle;
  std::vector<MissingEntryPoint>& missing;
  std::vector<ResolvedEntryPoint>* asked = nullptr;

  template <typename Fn>
  const char* find(Fn& slot, std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (void* p = ::dlsym(handle, n)) {
        slot = reinterpret_cast<Fn>(p);
        return n;
      }
    }
    return nullptr;
  }
  void record(const char* preferred, const char* taken, const char* disables) {
    if (!taken) missing.push_back({preferred, disables});
    if (asked) asked->push_back({preferred, taken ? taken : "", disables});
  }
  template <typename Fn>
  void resolve(Fn& slot, std::initializer_list<const char*> names, const char* disables) {
    record(*names.begin(), find(slot, names), disables);
  }
  // An entry point whose newer names take one struct layout and whose unsuffixed name of older
  // drivers takes another: the newer one goes to `slot`, else the older to `v1_slot`.
  template <typename Fn, typename V1Fn>
  void resolve_versioned(Fn& slot, V1Fn& v1_slot, std::initializer_list<const char*> names, const char* v1_name,
                         const char* disables) {
    const char* taken = find(slot, names);
    if (!taken) taken = find(v1_slot, {v1_name});
    record(*names.begin(), taken, disables);
  }
};

// Every entry point healthd uses, newer names first.
void resolve_api(Resolver& r, NvmlApi& a) {
  r.resolve(a.init, {"nvmlInit_v2", "nvmlInit"}, "everything");
  r.resolve(a.shutdown, {"nvmlShutdown"}, "clean shutdown");
  r.resolve(a.error_string, {"nvmlErrorString"}, "error texts");
  r.resolve(a.driver_version, {"nvmlSystemGetDriverVersion"}, "driver version");
  r.resolve(a.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, "everything");
  r.resolve(a.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, "everything");
  r.resolve(a.name, {"nvmlDeviceGetName"}, "GPU names");
  r.resolve(a.uuid, {"nvmlDeviceGetUUID"}, "GPU UUIDs");
  r.resolve(a.pci_info, {"nvmlDeviceGetPciInfo_v3"}, "PCI addresses");
  r.resolve(a.total_ecc, {"nvmlDeviceGetTotalEccErrors"}, "ECC counters");
  r.resolve(a.retired_pages, {"nvmlDeviceGetRetiredPages"}, "retired pages");
  r.resolve(a.retired_pages_pending, {"nvmlDeviceGetRetiredPagesPendingStatus"}, "retired pages pending");
  r.resolve(a.remapped_rows, {"nvmlDeviceGetRemappedRows"}, "row remapping");
  r.resolve(a.clock_reasons, {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
          "clock slowdown");
  r.resolve(a.pcie_gen, {"nvmlDeviceGetCurrPcieLinkGeneration"}, "PCIe link");
  r.resolve(a.pcie_max_gen, {"nvmlDeviceGetMaxPcieLinkGeneration"}, "PCIe link");
  r.resolve(a.pcie_width, {"nvmlDeviceGetCurrPcieLinkWidth"}, "PCIe link");
  r.resolve(a.pcie_max_width, {"nvmlDeviceGetMaxPcieLinkWidth"}, "PCIe link");
  r.resolve(a.temperature, {"nvmlDeviceGetTemperature"}, "temperature");
  r.resolve(a.utilization, {"nvmlDeviceGetUtilizationRates"}, "utilization");
  r.resolve(a.power_usage, {"nvmlDeviceGetPowerUsage"}, "power");
  r.resolve(a.power_limit, {"nvmlDeviceGetEnforcedPowerLimit"}, "power");
  r.resolve(a.persistence_mode, {"nvmlDeviceGetPersistenceMode"}, "persistence mode");
  r.resolve(a.nvlink_state, {"nvmlDeviceGetNvLinkState"}, "NVLink state");
  r.resolve(a.nvlink_error, {"nvmlDeviceGetNvLinkErrorCounter"}, "NVLink error counters");
  r.resolve(a.field_values, {"nvmlDeviceGetFieldValues"}, "GPU recovery action");
  r.resolve(a.event_set_create, {"nvmlEventSetCreate"}, "XID events");
  r.resolve(a.event_set_free, {"nvmlEventSetFree"}, "XID events");
  r.resolve(a.supported_events, {"nvmlDeviceGetSupportedEventTypes"}, "XID events");
  r.resolve(a.register_events, {"nvmlDeviceRegisterEvents"}, "XID events");
  r.resolve(a.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, "XID events");
  r.resolve_versioned(a.compute_processes, a.compute_processes_v1,
                    {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
                    "nvmlDeviceGetComputeRunningProcesses", "processes on the GPU");
  r.resolve_versioned(a.graphics_processes, a.graphics_processes_v1,
                    {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
                    "nvmlDeviceGetGraphicsRunningProcesses", "graphics processes on the GPU");
}

std::expected<void*, std::string> load(const std::string& path) {
  ::dlerror();
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) return h;
  const char* e = ::dlerror();
  return std::unexpected(e ? std::string(e) : path + ": cannot be loaded");
}

}  // namespace

std::expected<std::vector<ResolvedEntryPoint>, std::string> NvmlLibrary::entry_points(const std::string& path) {
  auto loaded = load(path);
  if (!loaded) return std::unexpected(loaded.error());
  void* h = *loaded;
  std::vector<MissingEntryPoint> missing;
  std::vector<ResolvedEntryPoint> asked;
  Resolver r{h, missing, &asked};
  NvmlApi api;
  resolve_api(r, api);
  ::dlclose(h);
  return asked;
}

std::expected<std::shared_ptr<NvmlLibrary>, std::string> NvmlLibrary::open(const std::string& path) {
  auto loaded = load(path);
  if (!loaded) return std::unexpected(loaded.error());
  void* h = *loaded;
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary);
  lib->handle_ = h;
  lib->path_ = path;
  auto& a = lib->api_;
  Resolver r{h, lib->missing_};
  resolve_api(r, a);
  if (!a.init || !a.device_count || !a.handle_by_index)
    return std::unexpected(path + ": not an NVML library (nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex missing)");
  if (auto rc = a.init(); rc != NVML_SUCCESS) {
    auto why = lib->error(rc);
    a.shutdown = nullptr;  // never initialised: nothing to shut down
    return std::unexpected("nvmlInit: " + why);
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (abandoned_) return;  // a thread is still inside it: leave it loaded and initialised
  if (api_.shutdown) api_.shutdown();
  if (handle_) ::dlclose(handle_);
}

std::string NvmlLibrary::error(nvmlReturn_t rc) const {
  if (api_.error_string) {
    if (const char* s = api_.error_string(rc)) return sanitize(s, 256);
  }
  return "NVML error " + std::to_string(rc);
}

}  // namespace ar::healthd
