#include "nvml_collector.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
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

namespace {

// Reads one GPU, a group of fields per method. Every call goes through query(), which names the call
// in progress (for a hang) and records why it failed unless the device simply lacks the feature. A lost
// GPU, or one that needs a reset, makes every later query pointless: query() then refuses at once.
class DeviceReader {
 public:
  DeviceReader(const NvmlLibrary& lib, nvmlDevice_t dev, unsigned index, GpuSnapshot& gpu,
               const std::function<void(std::string)>& enter)
      : lib_(lib), api_(lib.api()), dev_(dev), which_(" (GPU " + std::to_string(index) + ")"), gpu_(gpu), enter_(enter) {}

  void identity();
  void memory_errors();
  void operating_state();
  void processes();
  void nvlinks();
  void recovery_action();

 private:
  template <typename Call>
  bool query(const char* name, Call&& call) {
    if (gpu_.lost) return false;
    enter_(std::string(name) + which_);
    nvmlReturn_t rc = call();
    if (rc == NVML_SUCCESS) return true;
    if (rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_RESET_REQUIRED) gpu_.lost = std::string(name) + ": " + lib_.error(rc);
    else if (rc != NVML_ERROR_NOT_SUPPORTED) gpu_.errors[name] = lib_.error(rc);
    return false;
  }

  void uint_query(const char* name, nvml::UintFn fn, std::optional<unsigned>& out) {
    unsigned v = 0;
    if (fn && query(name, [&] { return fn(dev_, &v); })) out = v;
  }

  template <typename Fn>
  std::optional<std::vector<unsigned>> process_list(const char* name, Fn fn);
  void nvlink(unsigned link);

  const NvmlLibrary& lib_;
  const NvmlApi& api_;
  nvmlDevice_t dev_;
  std::string which_;
  GpuSnapshot& gpu_;
  const std::function<void(std::string)>& enter_;
};

void DeviceReader::identity() {
  if (api_.name) {
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (query("nvmlDeviceGetName", [&] { return api_.name(dev_, buf, sizeof buf); })) gpu_.name = sanitize_c_buffer(buf, sizeof buf);
  }
  if (api_.uuid) {
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (query("nvmlDeviceGetUUID", [&] { return api_.uuid(dev_, buf, sizeof buf); })) gpu_.uuid = sanitize_c_buffer(buf, sizeof buf);
  }
  if (api_.pci_info) {
    nvmlPciInfo_t pci{};
    if (query("nvmlDeviceGetPciInfo", [&] { return api_.pci_info(dev_, &pci); }))
      gpu_.bus_id = sanitize_c_buffer(pci.busId, sizeof pci.busId);
  }
}

void DeviceReader::memory_errors() {
  if (api_.total_ecc) {
    unsigned long long v = 0;
    if (query("nvmlDeviceGetTotalEccErrors", [&] {
          return api_.total_ecc(dev_, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &v);
        }))
      gpu_.ecc_uncorrected_volatile = v;
    if (query("nvmlDeviceGetTotalEccErrors", [&] {
          return api_.total_ecc(dev_, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &v);
        }))
      gpu_.ecc_corrected_volatile = v;
  }
  if (api_.retired_pages) {
    // Asked with no buffer, NVML reports the count (and "insufficient size" when there are any).
    for (auto cause : {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR}) {
      unsigned n = 0;
      bool ok = query("nvmlDeviceGetRetiredPages", [&] {
        auto rc = api_.retired_pages(dev_, cause, &n, nullptr);
        return rc == NVML_ERROR_INSUFFICIENT_SIZE ? NVML_SUCCESS : rc;
      });
      if (ok) (cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? gpu_.retired_pages_dbe : gpu_.retired_pages_sbe) = n;
    }
  }
  if (api_.retired_pages_pending) {
    nvmlEnableState_t s = NVML_FEATURE_DISABLED;
    if (query("nvmlDeviceGetRetiredPagesPendingStatus", [&] { return api_.retired_pages_pending(dev_, &s); }))
      gpu_.retired_pages_pending = s == NVML_FEATURE_ENABLED;
  }
  if (api_.remapped_rows) {
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (query("nvmlDeviceGetRemappedRows", [&] { return api_.remapped_rows(dev_, &corr, &unc, &pending, &failure); }))
      gpu_.row_remap = GpuSnapshot::RowRemap{corr, unc, pending != 0, failure != 0};
  }
}

// Clocks, PCIe links, temperature, power and persistence: the state the GPU runs in now.
void DeviceReader::operating_state() {
  if (api_.clock_reasons) {
    unsigned long long reasons = 0;
    if (query("nvmlDeviceGetCurrentClocksEventReasons", [&] { return api_.clock_reasons(dev_, &reasons); }))
      gpu_.clock_event_reasons = reasons;
  }
  uint_query("nvmlDeviceGetCurrPcieLinkGeneration", api_.pcie_gen, gpu_.pcie_gen);
  uint_query("nvmlDeviceGetMaxPcieLinkGeneration", api_.pcie_max_gen, gpu_.pcie_max_gen);
  uint_query("nvmlDeviceGetCurrPcieLinkWidth", api_.pcie_width, gpu_.pcie_width);
  uint_query("nvmlDeviceGetMaxPcieLinkWidth", api_.pcie_max_width, gpu_.pcie_max_width);
  if (api_.temperature) {
    unsigned t = 0;
    if (query("nvmlDeviceGetTemperature", [&] { return api_.temperature(dev_, NVML_TEMPERATURE_GPU, &t); }))
      gpu_.temperature_c = t;
  }
  if (api_.utilization) {
    nvmlUtilization_t u{};
    if (query("nvmlDeviceGetUtilizationRates", [&] { return api_.utilization(dev_, &u); }) && u.gpu <= 100)
      gpu_.utilization_pct = u.gpu;
  }
  uint_query("nvmlDeviceGetPowerUsage", api_.power_usage, gpu_.power_mw);
  uint_query("nvmlDeviceGetEnforcedPowerLimit", api_.power_limit, gpu_.power_limit_mw);
  if (api_.persistence_mode) {
    nvmlEnableState_t s = NVML_FEATURE_DISABLED;
    if (query("nvmlDeviceGetPersistenceMode", [&] { return api_.persistence_mode(dev_, &s); }))
      gpu_.persistence_mode = s == NVML_FEATURE_ENABLED;
  }
}

// The processes with a compute or graphics context on the GPU. Asked with no room first: NVML says
// "insufficient size" and the count, or success when there are none; then with room for
// kMaxProcesses, since processes may start in between.
template <typename Fn>
std::optional<std::vector<unsigned>> DeviceReader::process_list(const char* name, Fn fn) {
  using Info = std::remove_pointer_t<decltype(process_info_of(fn))>;  // nvmlProcessInfo_t or _v1_t
  unsigned n = 0;
  if (!query(name, [&] {
        auto rc = fn(dev_, &n, nullptr);
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
          auto rc = fn(dev_, &n, infos.data());
          too_many = rc == NVML_ERROR_INSUFFICIENT_SIZE;
          return too_many ? NVML_SUCCESS : rc;
        }))
      return std::nullopt;
    if (!too_many) {
      for (unsigned i = 0; i < std::min(n, kMaxProcesses); ++i) pids.push_back(infos[i].pid);
      return pids;
    }
  }
  gpu_.errors[name] = std::to_string(n) + " processes, more than the " + std::to_string(kMaxProcesses) + " read";
  return std::nullopt;
}

// Compute first: it is what a GPU check needs. A graphics list that failed for a reason worth telling
// leaves the answer unknown; one the device does not support adds nothing.
void DeviceReader::processes() {
  std::optional<std::vector<unsigned>> pids;
  if (api_.compute_processes || api_.compute_processes_v1) {
    const char* name = "nvmlDeviceGetComputeRunningProcesses";
    pids = api_.compute_processes ? process_list(name, api_.compute_processes) : process_list(name, api_.compute_processes_v1);
  }
  if (pids && (api_.graphics_processes || api_.graphics_processes_v1)) {
    const char* name = "nvmlDeviceGetGraphicsRunningProcesses";
    auto graphics = api_.graphics_processes ? process_list(name, api_.graphics_processes)
                                            : process_list(name, api_.graphics_processes_v1);
    if (graphics) pids->insert(pids->end(), graphics->begin(), graphics->end());
    else if (gpu_.lost || gpu_.errors.contains(name)) pids.reset();
  }
  if (pids) {
    std::sort(pids->begin(), pids->end());
    pids->erase(std::unique(pids->begin(), pids->end()), pids->end());
    gpu_.processes = std::move(pids);
  }
}

void DeviceReader::nvlink(unsigned link) {
  nvmlEnableState_t s = NVML_FEATURE_DISABLED;
  enter_("nvmlDeviceGetNvLinkState" + which_);
  auto rc = api_.nvlink_state(dev_, link, &s);
  if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) return;  // no such link
  if (rc != NVML_SUCCESS) {
    if (rc == NVML_ERROR_GPU_IS_LOST) gpu_.lost = "nvmlDeviceGetNvLinkState: " + lib_.error(rc);
    else gpu_.errors["nvmlDeviceGetNvLinkState"] = lib_.error(rc);
    return;
  }
  gpu_.nvlink_supported = true;
  NvLinkSnapshot l;
  l.index = link;
  l.active = s == NVML_FEATURE_ENABLED;
  if (api_.nvlink_error) {
    auto counter = [&](nvmlNvLinkErrorCounter_t c, std::optional<std::uint64_t>& out) {
      unsigned long long v = 0;
      enter_("nvmlDeviceGetNvLinkErrorCounter" + which_);
      if (api_.nvlink_error(dev_, link, c, &v) == NVML_SUCCESS) out = v;
    };
    counter(NVML_NVLINK_ERROR_DL_REPLAY, l.replay);
    counter(NVML_NVLINK_ERROR_DL_RECOVERY, l.recovery);
    counter(NVML_NVLINK_ERROR_DL_CRC_FLIT, l.crc_flit);
    counter(NVML_NVLINK_ERROR_DL_CRC_DATA, l.crc_data);
    counter(NVML_NVLINK_ERROR_DL_ECC_DATA, l.ecc_data);
  }
  gpu_.nvlinks.push_back(l);
}

void DeviceReader::nvlinks() {
  if (!api_.nvlink_state) return;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS && !gpu_.lost; ++link) nvlink(link);
}

void DeviceReader::recovery_action() {
  if (!api_.field_values) return;
  nvmlFieldValue_t fv{};
  fv.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
  if (query("nvmlDeviceGetFieldValues", [&] { return api_.field_values(dev_, 1, &fv); }) && fv.nvmlReturn == NVML_SUCCESS)
    gpu_.recovery_action = fv.value.uiVal;
}

}  // namespace

void NvmlCollector::read_device(const NvmlLibrary& lib, unsigned index, GpuSnapshot& gpu) {
  nvmlDevice_t dev = nullptr;
  enter("nvmlDeviceGetHandleByIndex (GPU " + std::to_string(index) + ")");
  if (auto rc = lib.api().handle_by_index(index, &dev); rc != NVML_SUCCESS) {
    gpu.lost = "nvmlDeviceGetHandleByIndex: " + lib.error(rc);
    return;
  }
  const std::function<void(std::string)> enter_call = [this](std::string call) { enter(std::move(call)); };
  DeviceReader reader(lib, dev, index, gpu, enter_call);
  // The order is the order of the calls a hang names; each step refuses at once once the GPU is lost.
  reader.identity();
  reader.memory_errors();
  reader.operating_state();
  reader.processes();
  reader.nvlinks();
  reader.recovery_action();
}

}  // namespace ar::healthd
