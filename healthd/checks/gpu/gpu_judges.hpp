// Judges of a GPU snapshot, one per area, pure: they take what the NVML collector gathered (and the
// thresholds) and return one result each, naming the GPU (index, PCI bus id, UUID) behind the worst
// finding, with every GPU's figures in `detail`. A field the driver could not give is "not checked",
// never healthy and never broken.
#pragma once

#include <cstdint>

#include "checks/check.hpp"
#include "collectors/gpu_snapshot.hpp"

namespace ar::healthd {

struct GpuThresholds {
  std::uint32_t expected_count = 0;          // 0: any number is fine
  bool required = false;                     // GPUs are expected: no NVML at all is a fault
  std::uint64_t ecc_uncorrected_max = 0;     // volatile uncorrected ECC errors tolerated
  std::uint32_t retired_pages_max = 60;      // NVIDIA: a board past ~60 retired pages is replaced
  Remedy memory_action = Remedy::drain;
  Remedy clock_slowdown_action = Remedy::warn;
  Remedy pcie_width_action = Remedy::drain;
  Remedy pcie_gen_action = Remedy::warn;
  std::uint32_t nvlink_expected_links = 0;   // per GPU; 0: links seen active must stay active
  Remedy nvlink_down_action = Remedy::drain;
  std::uint64_t nvlink_error_rise_max = 100; // error counter growth per sweep, per link
  Remedy nvlink_error_action = Remedy::warn;
  std::uint32_t temperature_max_c = 95;
  Remedy temperature_action = Remedy::warn;
  bool persistence_required = false;
  bool power_check = false;
};

// "GPU 3 (00000000:3B:00.0, GPU-8a...)"
std::string gpu_label(const GpuSnapshot& gpu);

CheckResult judge_gpu_nvml(const GpuFleetSnapshot& fleet);
CheckResult judge_gpu_count(const GpuFleetSnapshot& fleet, const GpuThresholds& t);
CheckResult judge_gpu_memory(const GpuFleetSnapshot& fleet, const GpuThresholds& t);
CheckResult judge_gpu_clocks(const GpuFleetSnapshot& fleet, const GpuThresholds& t);
CheckResult judge_gpu_pcie(const GpuFleetSnapshot& fleet, const GpuThresholds& t);
// `previous`: the last snapshot (error counter growth, links that were active); may be empty.
CheckResult judge_gpu_nvlink(const GpuFleetSnapshot& fleet, const GpuFleetSnapshot* previous, const GpuThresholds& t);
CheckResult judge_gpu_recovery(const GpuFleetSnapshot& fleet);
CheckResult judge_gpu_temperature(const GpuFleetSnapshot& fleet, const GpuThresholds& t);
CheckResult judge_gpu_power(const GpuFleetSnapshot& fleet, const GpuThresholds& t);

}  // namespace ar::healthd
