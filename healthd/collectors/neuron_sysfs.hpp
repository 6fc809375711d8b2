// What the AWS Neuron devices (Trainium, Inferentia) of a host look like in sysfs and /dev, read into
// plain values (no judging here).
//
// Layouts read (Neuron sysfs user guide and the aws-neuronx-dkms driver's neuron_sysfs_metrics.c):
//   /sys/devices/virtual/neuron_device/neuron<N>/                one directory per device
//   /dev/neuron<N>                                               one device node per device
//   .../neuron<N>/stats/hardware/{mem_ecc_uncorrected, mem_ecc_repairable_uncorrected,
//                                 sram_ecc_uncorrected}          driver >= 2.14: one number per file
//   .../neuron<N>/neuron_core<M>/stats/hardware/<same names>     per-core copies, where a driver has them
// A counter may also be a counter directory holding `total` (the driver's counter shape); it is read
// from there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ar::healthd {

struct NeuronErrorCounter {
  std::string scope;  // "neuron3" or "neuron3/neuron_core1"
  std::string name;   // "mem_ecc_uncorrected"
  std::uint64_t value = 0;
};

struct NeuronDevice {
  std::string name;                          // "neuron3"
  bool has_hardware_stats = false;           // a stats/hardware directory was found
  std::vector<NeuronErrorCounter> counters;  // every readable counter
  std::vector<std::string> errors;           // counters that could not be read, with why
};

struct NeuronSnapshot {
  bool sysfs_present = false;        // /sys/devices/virtual/neuron_device exists (the driver is loaded)
  std::vector<NeuronDevice> devices;  // by device number
  std::uint32_t dev_nodes = 0;        // /dev/neuron<N> entries
};

// Reads under `host_root` (which may be "/").
NeuronSnapshot read_neuron_sysfs(const std::filesystem::path& host_root);

}  // namespace ar::healthd
