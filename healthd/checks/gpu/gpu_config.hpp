// [checks.gpu] and [[checks.gpu.xid]]: the NVIDIA GPU checks' settings (the NVML snapshot judges and
// the XID check) and their reader.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "checks/gpu/gpu_judges.hpp"
#include "checks/gpu/xid_policy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct GpuConfig : SettingsOf<GpuConfig> {
  static constexpr std::string_view kSection = "gpu";
  bool enabled = true;                        // off: neither NVML nor XIDs are looked at
  std::string library = "libnvidia-ml.so.1";  // dlopen name or absolute path
  std::chrono::milliseconds deadline{5000};   // one NVML snapshot; past it: "NVML not answering"
  bool events = true;                         // watch NVML's event set for XIDs as they happen
  GpuThresholds thresholds;                   // expected count, ECC, PCIe, NVLink, temperature...
  // XIDs (from NVML events and kernel-log lines)
  std::chrono::seconds xid_hold{600};         // how long an XID fault holds after its last event
  Remedy xid_unknown = Remedy::drain;         // an XID the table does not list
  std::map<unsigned, XidRule> xid_rules;      // [[checks.gpu.xid]]: the admin's entries over the defaults
  std::filesystem::path boot_id = "/proc/sys/kernel/random/boot_id";  // read under the host root

  void apply_profile(const InstanceProfile& profile) override {
    // GPU counts: 0 in [checks.gpu] means "not set" (a GPU node never expects zero GPUs).
    if (thresholds.expected_count == 0) thresholds.expected_count = profile.gpus;
    if (thresholds.nvlink_expected_links == 0 && profile.gpus > 0) thresholds.nvlink_expected_links = profile.nvlinks_per_gpu;
  }
};

CheckSection gpu_section();

}  // namespace ar::healthd
