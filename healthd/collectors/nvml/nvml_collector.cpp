#include "nvml_collector.hpp"

#include <algorithm>
#include <cctype>
#include <type_traits>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

// The most processes read from one GPU: a reset is refused at the first anyway, and more than this on
// one device is read as "could not look", never as a partial list.
constexpr unsigned kMaxProcesses = 256;

// The struct a running-processes entry point fills (its layout differs between _v2/_v3 and v1).
template <typename Info>
Info* process_info_of(nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, Info*)) {
  return nullptr;
}

}  // namespace

std::string short_pci_address(const std::string& bus_id) {
  // "00000000:18:00.0" -> "0000:18:00"; "0000:18:00" stays.
  auto first = bus_id.find(':');
  if (first == std::string::npos) return bus_id;
  std::string domain = bus_id.substr(0, first);
  if (domain.size() > 4) domain = domain.substr(domain.size() - 4);
  std::string rest = bus_id.substr(first + 1);
  rest = rest.substr(0, rest.find('.'));
  std::string out = domain + ":" + rest;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

void NvmlCollector::enter(std::string call) {
  std::lock_guard lock(mutex_);
  current_ = std::move(call);
}

std::string NvmlCollector::current_call() const {
  std::lock_guard lock(mutex_);
  return current_;
}

void NvmlCollector::abandon() {
  std::lock_guard lock(mutex_);
  if (lib_) lib_->abandon();
}

std::shared_ptr<NvmlLibrary> NvmlCollector::library(std::string& error) {
  {
    std::lock_guard lock(mutex_);
    if (lib_) return lib_;
  }
  enter("nvmlInit");
  auto opened = NvmlLibrary::open(path_);
  enter("");
  if (!opened) {
    error = opened.error();
    return nullptr;
  }
  std::lock_guard lock(mutex_);
  lib_ = *opened;
  return lib_;
}

GpuFleetSnapshot NvmlCollector::collect() {
  GpuFleetSnapshot fleet;
  auto lib = library(fleet.load_error);
  if (!lib) return fleet;
  fleet.nvml_loaded = true;
  fleet.missing_symbols = lib->missing();
  const auto& api = lib->api();
  if (api.driver_version) {
    char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    enter("nvmlSystemGetDriverVersion");
    if (api.driver_version(buf, sizeof buf) == NVML_SUCCESS) fleet.driver_version = sanitize_c_buffer(buf, sizeof buf);
  }
  unsigned count = 0;
  enter("nvmlDeviceGetCount");
  if (auto rc = api.device_count(&count); rc != NVML_SUCCESS) {
    fleet.load_error = "nvmlDeviceGetCount: " + lib->error(rc);
    enter("");
    return fleet;
  }
  fleet.device_count = count;
  for (unsigned i = 0; i < count; ++i) {
    GpuSnapshot gpu;
    gpu.index = i;
    read_device(*lib, i, gpu);
    fleet.gpus.push_back(std::move(gpu));
  }
  enter("");
  return fleet;
}

std::expected<GpuSnapshot, std::string> NvmlCollector::collect_gpu(const std::string& bus_id) {
  if (bus_id.empty()) return std::unexpected(std::string("no GPU bus id given"));
  const std::string shown = sanitize(bus_id, 64);  // the caller's text, in an error
  std::string error;
  auto lib = library(error);
  if (!lib) return std::unexpected(error);
  const auto& api = lib->api();
  if (!api.pci_info)
    return std::unexpected("GPU " + shown + ": this driver's NVML lacks nvmlDeviceGetPciInfo_v3 (PCI addresses)");
  const std::string wanted = short_pci_address(bus_id);
  unsigned count = 0;
  enter("nvmlDeviceGetCount");
  if (auto rc = api.device_count(&count); rc != NVML_SUCCESS) {
    enter("");
    return std::unexpected("GPU " + shown + ": nvmlDeviceGetCount: " + lib->error(rc));
  }
  std::string listed, unanswered;
  auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
  for (unsigned i = 0; i < count; ++i) {
    const std::string which = " (GPU " + std::to_string(i) + ")";
    nvmlDevice_t dev = nullptr;
    enter("nvmlDeviceGetHandleByIndex" + which);
    if (auto rc = api.handle_by_index(i, &dev); rc != NVML_SUCCESS) {
      add(unanswered, "GPU " + std::to_string(i) + ": " + lib->error(rc));
      continue;
    }
    nvmlPciInfo_t pci{};
    enter("nvmlDeviceGetPciInfo" + which);
    if (auto rc = api.pci_info(dev, &pci); rc != NVML_SUCCESS) {
      add(unanswered, "GPU " + std::to_string(i) + ": " + lib->error(rc));
      continue;
    }
    const std::string address = short_pci_address(sanitize_c_buffer(pci.busId, sizeof pci.busId));
    if (address != wanted) {
      add(listed, address);
      continue;
    }
    GpuSnapshot gpu;
    gpu.index = i;
    read_device(*lib, i, gpu);
    enter("");
    return gpu;
  }
  enter("");
  std::string why = "no GPU at " + shown + " (NVML has " + std::to_string(count) + " GPU" +
                    (count == 1 ? "" : "s") + (listed.empty() ? "" : ": " + listed);
  if (!unanswered.empty()) why += "; not answering: " + unanswered;
  return std::unexpected(why + ")");
}

std::expected<GpuSnapshot, std::string> collect_one_gpu(const std::filesystem::path& library, const std::string& bus_id) {
  NvmlCollector collector(library.string());
  return collector.collect_gpu(bus_id);  // the collector's library goes with it: nvmlShutdown, dlclose
}

void NvmlCollector::read_device(const NvmlLibrary& lib, unsigned index, GpuSnapshot& gpu) {
  const auto& api = lib.api();
  const std::string which = " (GPU " + std::to_string(index) + ")";
  nvmlDevice_t dev = nullptr;
  enter("nvmlDeviceGetHandleByIndex" + which);
  if (auto rc = api.handle_by_index(index, &dev); rc != NVML_SUCCESS) {
    gpu.lost = "nvmlDeviceGetHandleByIndex: " + lib.error(rc);
    return;
  }
  // Runs one query; records why it failed unless the device simply lacks the feature. A lost GPU or
  // one that needs a reset makes every later query pointless.
  auto query = [&](const char* name, auto&& call) -> bool {
    if (gpu.lost) return false;
    enter(std::string(name) + which);
    nvmlReturn_t rc = call();
    if (rc == NVML_SUCCESS) return true;
    if (rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_RESET_REQUIRED) gpu.lost = std::string(name) + ": " + lib.error(rc);
    else if (rc != NVML_ERROR_NOT_SUPPORTED) gpu.errors[name] = lib.error(rc);
    return false;
  };

  if (api.name) {
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (query("nvmlDeviceGetName", [&] { return api.name(dev, buf, sizeof buf); })) gpu.name = sanitize_c_buffer(buf, sizeof buf);
  }
  if (api.uuid) {
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (query("nvmlDeviceGetUUID", [&] { return api.uuid(dev, buf, sizeof buf); })) gpu.uuid = sanitize_c_buffer(buf, sizeof buf);
  }
  if (api.pci_info) {
    nvmlPciInfo_t pci{};
    if (query("nvmlDeviceGetPciInfo", [&] { return api.pci_info(dev, &pci); })) gpu.bus_id = sanitize_c_buffer(pci.busId, sizeof pci.busId);
  }
  if (api.total_ecc) {
    unsigned long long v = 0;
    if (query("nvmlDeviceGetTotalEccErrors", [&] {
          return api.total_ecc(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &v);
        }))
      gpu.ecc_uncorrected_volatile = v;
    if (query("nvmlDeviceGetTotalEccErrors", [&] {
          return api.total_ecc(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &v);
        }))
      gpu.ecc_corrected_volatile = v;
  }
  if (api.retired_pages) {
    // Asked with no buffer, NVML reports the count (and "insufficient size" when there are any).
    for (auto cause : {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR}) {
      unsigned n = 0;
      bool ok = query("nvmlDeviceGetRetiredPages", [&] {
        auto rc = api.retired_pages(dev, cause, &n, nullptr);
        return rc == NVML_ERROR_INSUFFICIENT_SIZE ? NVML_SUCCESS : rc;
      });
      if (ok) (cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? gpu.retired_pages_dbe : gpu.retired_pages_sbe) = n;
    }
  }
  if (api.retired_pages_pending) {
    nvmlEnableState_t s = NVML_FEATURE_DISABLED;
    if (query("nvmlDeviceGetRetiredPagesPendingStatus", [&] { return api.retired_pages_pending(dev, &s); }))
      gpu.retired_pages_pending = s == NVML_FEATURE_ENABLED;
  }
  if (api.remapped_rows) {
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (query("nvmlDeviceGetRemappedRows", [&] { return api.remapped_rows(dev, &corr, &unc, &pending, &failure); }))
      gpu.row_remap = GpuSnapshot::RowRemap{corr, unc, pending != 0, failure != 0};
  }
  if (api.clock_reasons) {
    unsigned long long reasons = 0;
    if (query("nvmlDeviceGetCurrentClocksEventReasons", [&] { return api.clock_reasons(dev, &reasons); }))
      gpu.clock_event_reasons = reasons;
  }
  auto uint_query = [&](const char* name, nvml::UintFn fn, std::optional<unsigned>& out) {
    unsigned v = 0;
    if (fn && query(name, [&] { return fn(dev, &v); })) out = v;
  };
  uint_query("nvmlDeviceGetCurrPcieLinkGeneration", api.pcie_gen, gpu.pcie_gen);
  uint_query("nvmlDeviceGetMaxPcieLinkGeneration", api.pcie_max_gen, gpu.pcie_max_gen);
  uint_query("nvmlDeviceGetCurrPcieLinkWidth", api.pcie_width, gpu.pcie_width);
  uint_query("nvmlDeviceGetMaxPcieLinkWidth", api.pcie_max_width, gpu.pcie_max_width);
  if (api.temperature) {
    unsigned t = 0;
    if (query("nvmlDeviceGetTemperature", [&] { return api.temperature(dev, NVML_TEMPERATURE_GPU, &t); }))
      gpu.temperature_c = t;
  }
  uint_query("nvmlDeviceGetPowerUsage", api.power_usage, gpu.power_mw);
  uint_query("nvmlDeviceGetEnforcedPowerLimit", api.power_limit, gpu.power_limit_mw);
  if (api.persistence_mode) {
    nvmlEnableState_t s = NVML_FEATURE_DISABLED;
    if (query("nvmlDeviceGetPersistenceMode", [&] { return api.persistence_mode(dev, &s); }))
      gpu.persistence_mode = s == NVML_FEATURE_ENABLED;
  }
  // The processes with a compute or graphics context on the GPU. Asked with no room first: NVML says
  // "insufficient size" and the count, or success when there are none; then with room for
  // kMaxProcesses, since processes may start in between.
  auto process_list = [&](const char* name, auto fn) -> std::optional<std::vector<unsigned>> {
    using Info = std::remove_pointer_t<decltype(process_info_of(fn))>;  // nvmlProcessInfo_t or _v1_t
    unsigned n = 0;
    if (!query(name, [&] {
          auto rc = fn(dev, &n, nullptr);
          return rc == NVML_ERROR_INSUFFICIENT_SIZE ? NVML_SUCCESS : rc;
        }))
      return std::nullopt;
    std::vector<unsigned> pids;
    if (n == 0) return pids;
    bool too_many = n > kMaxProcesses;
    if (!too_many) {
      std::vector<Info> infos(kMaxProcesses);
      n = kMaxProcesses;
      if (!query(name, [&] {
            auto rc = fn(dev, &n, infos.data());
            too_many = rc == NVML_ERROR_INSUFFICIENT_SIZE;
            return too_many ? NVML_SUCCESS : rc;
          }))
        return std::nullopt;
      if (!too_many) {
        for (unsigned i = 0; i < std::min(n, kMaxProcesses); ++i) pids.push_back(infos[i].pid);
        return pids;
      }
    }
    gpu.errors[name] = std::to_string(n) + " processes, more than the " + std::to_string(kMaxProcesses) + " read";
    return std::nullopt;
  };
  // Compute first: it is what a GPU check needs. A graphics list that failed for a reason worth telling
  // leaves the answer unknown; one the device does not support adds nothing.
  std::optional<std::vector<unsigned>> processes;
  if (api.compute_processes || api.compute_processes_v1) {
    const char* name = "nvmlDeviceGetComputeRunningProcesses";
    processes = api.compute_processes ? process_list(name, api.compute_processes)
                                      : process_list(name, api.compute_processes_v1);
  }
  if (processes && (api.graphics_processes || api.graphics_processes_v1)) {
    const char* name = "nvmlDeviceGetGraphicsRunningProcesses";
    auto graphics = api.graphics_processes ? process_list(name, api.graphics_processes)
                                           : process_list(name, api.graphics_processes_v1);
    if (graphics) processes->insert(processes->end(), graphics->begin(), graphics->end());
    else if (gpu.lost || gpu.errors.contains(name)) processes.reset();
  }
  if (processes) {
    std::sort(processes->begin(), processes->end());
    processes->erase(std::unique(processes->begin(), processes->end()), processes->end());
    gpu.processes = std::move(processes);
  }
  if (api.nvlink_state) {
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS && !gpu.lost; ++link) {
      nvmlEnableState_t s = NVML_FEATURE_DISABLED;
      enter("nvmlDeviceGetNvLinkState" + which);
      auto rc = api.nvlink_state(dev, link, &s);
      if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;  // no such link
      if (rc != NVML_SUCCESS) {
        if (rc == NVML_ERROR_GPU_IS_LOST) gpu.lost = "nvmlDeviceGetNvLinkState: " + lib.error(rc);
        else gpu.errors["nvmlDeviceGetNvLinkState"] = lib.error(rc);
        continue;
      }
      gpu.nvlink_supported = true;
      NvLinkSnapshot l;
      l.index = link;
      l.active = s == NVML_FEATURE_ENABLED;
      if (api.nvlink_error) {
        auto counter = [&](nvmlNvLinkErrorCounter_t c, std::optional<std::uint64_t>& out) {
          unsigned long long v = 0;
          enter("nvmlDeviceGetNvLinkErrorCounter" + which);
          if (api.nvlink_error(dev, link, c, &v) == NVML_SUCCESS) out = v;
        };
        counter(NVML_NVLINK_ERROR_DL_REPLAY, l.replay);
        counter(NVML_NVLINK_ERROR_DL_RECOVERY, l.recovery);
        counter(NVML_NVLINK_ERROR_DL_CRC_FLIT, l.crc_flit);
        counter(NVML_NVLINK_ERROR_DL_CRC_DATA, l.crc_data);
        counter(NVML_NVLINK_ERROR_DL_ECC_DATA, l.ecc_data);
      }
      gpu.nvlinks.push_back(l);
    }
  }
  if (api.field_values) {
    nvmlFieldValue_t fv{};
    fv.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
    if (query("nvmlDeviceGetFieldValues", [&] { return api.field_values(dev, 1, &fv); }) && fv.nvmlReturn == NVML_SUCCESS)
      gpu.recovery_action = fv.value.uiVal;
  }
}

}  // namespace ar::healthd
