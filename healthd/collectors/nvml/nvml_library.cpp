#include "nvml_library.hpp"

#include <dlfcn.h>

#include <initializer_list>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

// The first of `names` the library has, or nullptr; a missing one is listed with what it disables.
template <typename Fn>
void resolve(void* handle, Fn& slot, std::initializer_list<const char*> names, const char* disables,
             std::vector<MissingEntryPoint>& missing) {
  for (const char* n : names) {
    if (void* p = ::dlsym(handle, n)) {
      slot = reinterpret_cast<Fn>(p);
      return;
    }
  }
  missing.push_back({*names.begin(), disables});
}

// An entry point whose newer names take one struct layout and whose unsuffixed name of older drivers
// takes another: the newer one goes to `slot`, else the older to `v1_slot`, else it is missing.
template <typename Fn, typename V1Fn>
void resolve_versioned(void* handle, Fn& slot, V1Fn& v1_slot, std::initializer_list<const char*> names,
                       const char* v1_name, const char* disables, std::vector<MissingEntryPoint>& missing) {
  std::vector<MissingEntryPoint> none;
  resolve(handle, slot, names, disables, none);
  if (slot) return;
  resolve(handle, v1_slot, {v1_name}, disables, none);
  if (!v1_slot) missing.push_back({*names.begin(), disables});
}

}  // namespace

std::expected<std::shared_ptr<NvmlLibrary>, std::string> NvmlLibrary::open(const std::string& path) {
  ::dlerror();
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = ::dlerror();
    return std::unexpected(e ? std::string(e) : path + ": cannot be loaded");
  }
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary);
  lib->handle_ = h;
  lib->path_ = path;
  auto& a = lib->api_;
  auto& m = lib->missing_;
  resolve(h, a.init, {"nvmlInit_v2", "nvmlInit"}, "everything", m);
  resolve(h, a.shutdown, {"nvmlShutdown"}, "clean shutdown", m);
  resolve(h, a.error_string, {"nvmlErrorString"}, "error texts", m);
  resolve(h, a.driver_version, {"nvmlSystemGetDriverVersion"}, "driver version", m);
  resolve(h, a.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, "everything", m);
  resolve(h, a.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, "everything", m);
  resolve(h, a.name, {"nvmlDeviceGetName"}, "GPU names", m);
  resolve(h, a.uuid, {"nvmlDeviceGetUUID"}, "GPU UUIDs", m);
  resolve(h, a.pci_info, {"nvmlDeviceGetPciInfo_v3"}, "PCI addresses", m);
  resolve(h, a.total_ecc, {"nvmlDeviceGetTotalEccErrors"}, "ECC counters", m);
  resolve(h, a.retired_pages, {"nvmlDeviceGetRetiredPages"}, "retired pages", m);
  resolve(h, a.retired_pages_pending, {"nvmlDeviceGetRetiredPagesPendingStatus"}, "retired pages pending", m);
  resolve(h, a.remapped_rows, {"nvmlDeviceGetRemappedRows"}, "row remapping", m);
  resolve(h, a.clock_reasons, {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
          "clock slowdown", m);
  resolve(h, a.pcie_gen, {"nvmlDeviceGetCurrPcieLinkGeneration"}, "PCIe link", m);
  resolve(h, a.pcie_max_gen, {"nvmlDeviceGetMaxPcieLinkGeneration"}, "PCIe link", m);
  resolve(h, a.pcie_width, {"nvmlDeviceGetCurrPcieLinkWidth"}, "PCIe link", m);
  resolve(h, a.pcie_max_width, {"nvmlDeviceGetMaxPcieLinkWidth"}, "PCIe link", m);
  resolve(h, a.temperature, {"nvmlDeviceGetTemperature"}, "temperature", m);
  resolve(h, a.utilization, {"nvmlDeviceGetUtilizationRates"}, "utilization", m);
  resolve(h, a.power_usage, {"nvmlDeviceGetPowerUsage"}, "power", m);
  resolve(h, a.power_limit, {"nvmlDeviceGetEnforcedPowerLimit"}, "power", m);
  resolve(h, a.persistence_mode, {"nvmlDeviceGetPersistenceMode"}, "persistence mode", m);
  resolve(h, a.nvlink_state, {"nvmlDeviceGetNvLinkState"}, "NVLink state", m);
  resolve(h, a.nvlink_error, {"nvmlDeviceGetNvLinkErrorCounter"}, "NVLink error counters", m);
  resolve(h, a.field_values, {"nvmlDeviceGetFieldValues"}, "GPU recovery action", m);
  resolve(h, a.event_set_create, {"nvmlEventSetCreate"}, "XID events", m);
  resolve(h, a.event_set_free, {"nvmlEventSetFree"}, "XID events", m);
  resolve(h, a.supported_events, {"nvmlDeviceGetSupportedEventTypes"}, "XID events", m);
  resolve(h, a.register_events, {"nvmlDeviceRegisterEvents"}, "XID events", m);
  resolve(h, a.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, "XID events", m);
  resolve_versioned(h, a.compute_processes, a.compute_processes_v1,
                    {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
                    "nvmlDeviceGetComputeRunningProcesses", "processes on the GPU", m);
  resolve_versioned(h, a.graphics_processes, a.graphics_processes_v1,
                    {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
                    "nvmlDeviceGetGraphicsRunningProcesses", "graphics processes on the GPU", m);
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
