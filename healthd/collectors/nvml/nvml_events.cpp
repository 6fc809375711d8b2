#include "nvml_events.hpp"

#include <map>
#include <optional>

#include <spdlog/spdlog.h>

#include "collectors/nvml/nvml_library.hpp"
#include "text/text.hpp"

namespace ar::healthd {

void NvmlEventWatcher::start() {
  std::promise<void> done;
  exited_ = done.get_future();
  thread_ = std::thread([this, done = std::move(done)]() mutable {
    run();
    done.set_value();
  });
}

bool NvmlEventWatcher::stop() {
  stopping_ = true;
  if (!thread_.joinable()) return !detached_;
  if (exited_.wait_for(std::chrono::seconds(2)) == std::future_status::ready) {
    thread_.join();
    return true;
  }
  thread_.detach();  // stuck in NVML: it ends when NVML returns, or with the process
  detached_ = true;
  return false;
}

std::string NvmlEventWatcher::problem() const {
  std::lock_guard lock(mutex_);
  return problem_;
}

void NvmlEventWatcher::set_problem(std::string p, spdlog::level::level_enum level) {
  std::lock_guard lock(mutex_);
  if (p != problem_ && !p.empty()) spdlog::log(level, "nvml events: {}", p);
  problem_ = std::move(p);
}

namespace {

// The GPUs registered in the event set, by NVML's handle: their index and PCI address, for the event.
using WatchedDevices = std::map<nvmlDevice_t, std::pair<unsigned, std::string>>;

// Registers every GPU that supports them for XIDs and double-bit ECC errors; a GPU that refuses is
// said (`problem`) and left out.
WatchedDevices register_devices(const NvmlLibrary& lib, nvmlEventSet_t set, unsigned count,
                                const std::function<void(std::string)>& problem) {
  const auto& api = lib.api();
  WatchedDevices devices;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (api.handle_by_index(i, &dev) != NVML_SUCCESS) continue;
    unsigned long long wanted = nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError;
    unsigned long long supported = wanted;
    if (api.supported_events && api.supported_events(dev, &supported) == NVML_SUCCESS) wanted &= supported;
    if (wanted == 0) continue;
    if (auto rc = api.register_events(dev, wanted, set); rc != NVML_SUCCESS) {
      problem("nvmlDeviceRegisterEvents (GPU " + std::to_string(i) + "): " + lib.error(rc));
      continue;
    }
    nvmlPciInfo_t pci{};
    std::string bus_id =
        api.pci_info && api.pci_info(dev, &pci) == NVML_SUCCESS ? sanitize_c_buffer(pci.busId, sizeof pci.busId) : "";
    devices[dev] = {i, bus_id};
  }
  return devices;
}

// What NVML reported, as the sink takes it; nothing for an event type not asked for.
std::optional<NvmlEvent> to_event(const nvmlEventData_t& data, const WatchedDevices& devices) {
  NvmlEvent e;
  if (auto it = devices.find(data.device); it != devices.end()) {
    e.gpu_index = it->second.first;
    e.bus_id = it->second.second;
  }
  if (data.eventType & nvmlEventTypeXidCriticalError) {
    e.xid = static_cast<unsigned>(data.eventData);
  } else if (data.eventType & nvmlEventTypeDoubleBitEccError) {
    e.xid = 48;
    e.double_bit_ecc = true;
  } else {
    return std::nullopt;
  }
  return e;
}

}  // namespace

void NvmlEventWatcher::pause(int seconds) {
  for (int i = 0; i < seconds * 10 && !stopping_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

void NvmlEventWatcher::run() {
  // Loading may fail now and work later (driver installed, module loaded): try every 30 s.
  while (!stopping_) {
    auto opened = NvmlLibrary::open(path_);
    if (!opened) {
      // No NVIDIA driver library: a node without NVIDIA GPUs, said without a warning at each start
      // (a GPU node that lost its driver faults in the GPU check's count, where a profile expects them).
      set_problem("not watching: " + opened.error(), spdlog::level::info);
      pause(30);
      continue;
    }
    auto lib = *opened;
    const auto& api = lib->api();
    if (!api.event_set_create || !api.register_events || !api.event_set_wait || !api.event_set_free) {
      set_problem("not watching: this driver's NVML has no event API; XIDs come from the kernel log only");
      return;
    }
    nvmlEventSet_t set = nullptr;
    if (auto rc = api.event_set_create(&set); rc != NVML_SUCCESS) {
      set_problem("nvmlEventSetCreate: " + lib->error(rc));
      pause(30);
      continue;
    }
    unsigned count = 0;
    api.device_count(&count);
    const auto devices = register_devices(*lib, set, count, [this](std::string p) { set_problem(std::move(p)); });
    if (devices.empty() && count > 0) {
      api.event_set_free(set);
      pause(30);
      continue;
    }
    set_problem("");
    spdlog::info("nvml events: watching {} GPU(s) for XIDs and double-bit ECC errors", devices.size());
    while (!stopping_) {
      nvmlEventData_t data{};
      auto rc = api.event_set_wait(set, &data, 500);
      if (rc == NVML_ERROR_TIMEOUT) continue;
      if (rc != NVML_SUCCESS) {
        // A lost GPU makes waits fail; keep watching the others, without spinning.
        set_problem("nvmlEventSetWait: " + lib->error(rc));
        pause(1);
        continue;
      }
      if (auto e = to_event(data, devices)) deliver(*e);
    }
    api.event_set_free(set);
  }
}

void NvmlEventWatcher::deliver(const NvmlEvent& e) {
  try {
    sink_(e);
  } catch (const std::exception& ex) {
    spdlog::error("nvml events: {}", ex.what());
  }
}

}  // namespace ar::healthd
