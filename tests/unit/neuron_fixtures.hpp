// Neuron sysfs trees as each driver generation lays them out, for the Neuron reader and check tests.
// Every path is written from a documented source, cited beside it:
//   [src-2.24]  aws-neuron-driver, aws-neuronx-dkms 2.24.7.0 source: neuron_sysfs_metrics.c
//               (ecc_attrs_info_tbl: attr type OTHER, shown as "%u\n", one number per file;
//               status/memory_usage/other_info counter tables with total/present[/peak] files),
//               v1|v2|v3/neuron_dhal_v*.c (arch suffixes "NDv2", "Trn1", "Trainium1"; V1 adds no ECC
//               nodes), neuron_module.c (MODULE_VERSION -> /sys/module/neuron/version).
//   [guide]     Neuron Sysfs User Guide (aws-neuron-sdk tools/neuron-sys-tools/neuron-sysfs-user-guide.rst).
//   [rn-2.28]   Neuron SDK release notes, driver 2.28.0.0: stats/hardware/health_status/.
//   [rn-2.30.2] Neuron 2.32.0 release notes, driver 2.30.2: health_status/unhealthy_components and
//               healthcheck_heartbeat (Trainium2/3), mem_ecc_corrected and sram_ecc_corrected.
//   [guide-2.33] Neuron Sysfs User Guide at Neuron 2.33: driver 2.31 "moved several nodes to new
//               paths" (which paths is not in any source this project could read: the 2.31 fixtures
//               are marked as assumptions).
#pragma once

#include <filesystem>
#include <string>

#include "fake_tree.hpp"

namespace ar::test {

inline const std::string kNeuronDevices = "/sys/devices/virtual/neuron_device/";

struct NeuronDeviceShape {
  std::string device_name = "Trainium1";  // [src-2.24] arch_device_name_suffix
  std::string arch = "NDv2";              // [src-2.24] "ND" + arch_nd_type_suffix
  int cores = 2;                          // Trn1: 2 NeuronCores per device, Trn2: 8 [src-2.24]
  bool ecc = true;                        // stats/hardware ECC counters (2.14 and later, not on v1)
  bool health_status = false;             // [rn-2.28]
  bool corrected = false;                 // [rn-2.30.2]
  bool unhealthy_components = false;      // [rn-2.30.2], Trainium2/3
  std::string ecc_dir = "stats/hardware";  // where the ECC files are (a 2.31 assumption may move them)
};

// One device directory with what every generation has (info, memory_usage, per-core status counters,
// the kernel's power directory and a symlink back up the tree, as sysfs has) plus the ECC nodes.
inline void add_neuron_device(const FakeTree& t, int n, const NeuronDeviceShape& shape) {
  const auto d = kNeuronDevices + "neuron" + std::to_string(n) + "/";
  t.write(d + "core_count", std::to_string(shape.cores) + "\n");                 // [guide]
  t.write(d + "connected_devices", "1, 3\n");                                     // [guide]
  t.write(d + "info/architecture/arch_type", shape.arch + "\n");                  // [src-2.24]
  t.write(d + "info/architecture/instance_type", "Trn1\n");                       // [src-2.24]
  t.write(d + "info/architecture/device_name", shape.device_name + "\n");         // [src-2.24]
  t.write(d + "info/notify_delay", "-1\n");                                       // [guide]
  t.write(d + "stats/power/utilization", "POWER_STATUS_VALID,1764590000,1.00,9.00,4.00\n");  // [guide]
  for (const char* cat : {"dma_buffers", "tensors", "constants"})               // [src-2.24] host_mem table
    for (const char* f : {"total", "present", "peak"})
      t.write(d + "stats/memory_usage/host_mem/" + cat + "/" + f, "0\n");
  t.write(d + "power/runtime_status", "unsupported\n");  // generic device PM, not the driver's [guide]
  std::filesystem::create_directory_symlink("../../../../class/neuron_device", t.root() / (d.substr(1) + "subsystem"));
  for (int c = 0; c < shape.cores; ++c) {
    const auto core = d + "neuron_core" + std::to_string(c) + "/";
    // [src-2.24] status_counter_nodes_info_tbl: runtime return codes, not ECC, never judged here
    for (const char* s : {"success", "failure", "hw_error", "hw_hbm_ue_error", "hw_nc_ue_error"}) {
      t.write(core + "stats/status/" + s + "/total", "0\n");
      t.write(core + "stats/status/" + s + "/present", "0\n");
    }
    t.write(core + "stats/other_info/reset_fail_count/total", "0\n");  // [src-2.24]
    t.write(core + "info/architecture/arch_type", "NCv2\n");           // [guide] example
  }
  if (shape.ecc) {
    const auto hw = d + shape.ecc_dir + "/";
    t.write(hw + "mem_ecc_uncorrected", "0\n");             // [src-2.24] ecc_attrs_info_tbl, [guide]
    t.write(hw + "sram_ecc_uncorrected", "0\n");            // [src-2.24]
    t.write(hw + "mem_ecc_repairable_uncorrected", "0\n");  // [src-2.24]
    if (shape.corrected) {
      t.write(hw + "mem_ecc_corrected", "0\n");   // [rn-2.30.2]; assumed beside the others
      t.write(hw + "sram_ecc_corrected", "0\n");  // [rn-2.30.2]
    }
  }
  if (shape.health_status) {
    const auto hs = d + "stats/hardware/health_status/";  // [rn-2.28]
    // [rn-2.28] "cached device health metrics including HBM ECC error counts and hardware error event
    // counter": the file names are not documented; these two stand for them.
    t.write(hs + "hbm_ecc_error_count", "0\n");
    t.write(hs + "hw_error_event_count", "0\n");
    if (shape.unhealthy_components) {
      t.write(hs + "unhealthy_components", "\n");   // [rn-2.30.2]: empty when nothing is failing (assumed)
      t.write(hs + "healthcheck_heartbeat", "1\n");  // [rn-2.30.2]
    }
  }
  t.write("/dev/neuron" + std::to_string(n), "");
}

inline void set_driver_version(const FakeTree& t, const std::string& version) {
  t.write("/sys/module/neuron/version", version + "\n");  // [src-2.24] MODULE_VERSION
}

// Whole hosts, one per generation.
inline NeuronDeviceShape trn1_2_24() { return {}; }
inline NeuronDeviceShape trn1_2_28() {
  NeuronDeviceShape s;
  s.health_status = true;
  return s;
}
inline NeuronDeviceShape trn2_2_30_2() {
  NeuronDeviceShape s;
  s.device_name = "Trainium2";
  s.arch = "NDv3";
  s.cores = 8;
  s.health_status = s.corrected = s.unhealthy_components = true;
  return s;
}

}  // namespace ar::test
