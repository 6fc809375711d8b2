// Reads every GPU's state through NVML into a GpuFleetSnapshot. Blocks as long as NVML does: a call
// into a GPU that is gone can hang, so the caller runs this on a thread of its own with a deadline
// (see checks/gpu_check), and `current_call()` names the call that did not come back.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "collectors/gpu_snapshot.hpp"
#include "collectors/nvml/nvml_library.hpp"

namespace ar::healthd {

class NvmlCollector {
 public:
  explicit NvmlCollector(std::string library_path) : path_(std::move(library_path)) {}

  // Loads the library on first use (and again after a failure: a driver may be installed later).
  GpuFleetSnapshot collect();

  // The one GPU at `bus_id`, in NVML's form ("00000000:3B:00.0") or the kernel log's ("0000:3b:00"):
  // matched by short_pci_address on both sides, read as collect() reads each GPU. The error says why
  // not: the library did not load, or no GPU answered at that address (it lists the addresses NVML has
  // and the GPUs that did not answer). Not to be called at the same time as collect() on one collector.
  std::expected<GpuSnapshot, std::string> collect_gpu(const std::string& bus_id);

  // "nvmlDeviceGetTemperature (GPU 2)": the NVML call in progress, empty when none.
  std::string current_call() const;

  // A collect() is hung inside NVML: keep the library loaded for ever, never call it again from here.
  void abandon();

  const std::string& library_path() const { return path_; }

 private:
  void enter(std::string call);
  std::shared_ptr<NvmlLibrary> library(std::string& error);
  void read_device(const NvmlLibrary& lib, unsigned index, GpuSnapshot& gpu);

  std::string path_;
  mutable std::mutex mutex_;
  std::shared_ptr<NvmlLibrary> lib_;
  std::string current_;
};

// Loads NVML from `library`, reads the GPU at `bus_id` (see NvmlCollector::collect_gpu), and shuts NVML
// down again before returning: for a caller that needs one GPU's state now (its persistence mode, the
// processes using it) and keeps no collector. Blocks as long as NVML does; bound it as GpuCheck does.
std::expected<GpuSnapshot, std::string> collect_one_gpu(const std::filesystem::path& library, const std::string& bus_id);

}  // namespace ar::healthd
