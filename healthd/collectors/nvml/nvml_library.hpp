// NVML, loaded at run time. Each entry point is resolved on its own: one missing in an older driver
// disables only what needs it (and `missing()` says which), and newer names are preferred to older
// ones (nvmlDeviceGetCurrentClocksEventReasons over ...ClocksThrottleReasons).
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "collectors/gpu_snapshot.hpp"
#include "collectors/nvml/nvml_api.hpp"

namespace ar::healthd {

struct NvmlApi {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DriverVersionFn driver_version = nullptr;
  nvml::DeviceCountFn device_count = nullptr;
  nvml::HandleByIndexFn handle_by_index = nullptr;
  nvml::StringFn name = nullptr;
  nvml::StringFn uuid = nullptr;
  nvml::PciInfoFn pci_info = nullptr;
  nvml::TotalEccFn total_ecc = nullptr;
  nvml::RetiredPagesFn retired_pages = nullptr;
  nvml::EnableStateFn retired_pages_pending = nullptr;
  nvml::RemappedRowsFn remapped_rows = nullptr;
  nvml::ClockReasonsFn clock_reasons = nullptr;
  nvml::UintFn pcie_gen = nullptr, pcie_max_gen = nullptr, pcie_width = nullptr, pcie_max_width = nullptr;
  nvml::TemperatureFn temperature = nullptr;
  nvml::UtilizationFn utilization = nullptr;
  nvml::UintFn power_usage = nullptr, power_limit = nullptr;
  nvml::EnableStateFn persistence_mode = nullptr;
  nvml::NvLinkStateFn nvlink_state = nullptr;
  nvml::NvLinkErrorFn nvlink_error = nullptr;
  nvml::FieldValuesFn field_values = nullptr;
  nvml::EventSetCreateFn event_set_create = nullptr;
  nvml::EventSetFreeFn event_set_free = nullptr;
  nvml::SupportedEventsFn supported_events = nullptr;
  nvml::RegisterEventsFn register_events = nullptr;
  nvml::EventSetWaitFn event_set_wait = nullptr;
  // The processes using a GPU: _v3 or _v2 (nvmlProcessInfo_t) when the driver has one, else the
  // unsuffixed entry point of older drivers (nvmlProcessInfo_v1_t) in the *_v1 slot. At most one of
  // each pair is set.
  nvml::RunningProcessesFn compute_processes = nullptr;
  nvml::RunningProcessesV1Fn compute_processes_v1 = nullptr;
  nvml::RunningProcessesFn graphics_processes = nullptr;
  nvml::RunningProcessesV1Fn graphics_processes_v1 = nullptr;
};

// One entry point healthd resolves: its preferred (newest) name, the name the library gave (empty:
// none of its names), and what it serves.
struct ResolvedEntryPoint {
  std::string preferred;
  std::string taken;
  std::string serves;
};

class NvmlLibrary {
 public:
  // Every entry point healthd resolves, as `path` answers them, without initialising NVML (no driver
  // is needed): what tests/nvml checks against NVIDIA's own builds of the library.
  static std::expected<std::vector<ResolvedEntryPoint>, std::string> entry_points(const std::string& path);
  // dlopen + nvmlInit. Errors name the library and the cause ("libnvidia-ml.so.1: cannot open shared
  // object file", "nvmlInit_v2: Driver Not Loaded").
  static std::expected<std::shared_ptr<NvmlLibrary>, std::string> open(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  // "nvmlDeviceGetRemappedRows (row remapping)": entry points this driver lacks and what they disable.
  const std::vector<MissingEntryPoint>& missing() const { return missing_; }
  std::string error(nvmlReturn_t rc) const;

  // A call is hung inside the library: it must be neither shut down nor unloaded under it.
  void abandon() { abandoned_ = true; }

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  NvmlApi api_;
  std::vector<MissingEntryPoint> missing_;
  bool abandoned_ = false;
};

}  // namespace ar::healthd
