// Reads every GPU's state through NVML into a GpuFleetSnapshot. Blocks as long as NVML does: a call
// into a GPU that is gone can hang, so the caller runs this on a thread of its own with a deadline
// (see checks/gpu_check), and `current_call()` names the call that did not come back.
#pragma once

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

}  // namespace ar::healthd
