// What the AWS Neuron devices (Trainium, Inferentia) of a host look like in sysfs and /dev, read into
// plain values (no judging here). Which names mean what, per driver generation and with sources, is
// in neuron_layout.hpp.
//
//   /sys/module/neuron/version                       the driver's version ("2.30.2.0")
//   /sys/devices/virtual/neuron_device/neuron<N>/    one directory per device
//     info/architecture/device_name                  "Trainium1", "Inferentia2", "Inferentia", ...
//     stats/hardware/<counter>                       the ECC counters, one number per file
//     stats/hardware/health_status/                  the driver's health bitmap (2.28 and later)
//   /dev/neuron<N>                                   one device node per device
//
// Because driver 2.31 moved nodes to paths no source here documents, counters are found by their
// documented names anywhere under a device directory (at most kMaxDepth deep, no symlink followed,
// the large memory_usage, power and per-core runtime-counter subtrees skipped); every counter records the path it was read
// from. Every numeric file in a directory named `hardware` is read too, known or not (an unknown one
// is data, never judged). A counter may also have the counter-directory shape (`total`/`present`); it
// is then read from `total`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "driver_version.hpp"

namespace ar::healthd {

struct NeuronErrorCounter {
  std::string scope;  // "neuron3" or "neuron3/neuron_core1"
  std::string name;   // "mem_ecc_uncorrected"
  std::string path;   // where, relative to the device directory: "stats/hardware/mem_ecc_uncorrected"
  std::uint64_t value = 0;
};

// stats/hardware/health_status (or wherever a directory of that name is under the device).
struct NeuronHealthStatus {
  std::string path;  // relative to the device directory; empty: not found
  // unhealthy_components split at commas and blanks; nullopt when the file is absent.
  std::optional<std::vector<std::string>> unhealthy_components;
  std::optional<std::uint64_t> heartbeat;  // healthcheck_heartbeat, when present and numeric
  std::map<std::string, std::string> other;  // every other file there, as text (at most 64 files)
};

struct NeuronDevice {
  std::string name;                          // "neuron3"
  std::string device_name;                   // info/architecture/device_name; empty if unreadable
  std::vector<NeuronErrorCounter> counters;  // every readable counter, in path order
  NeuronHealthStatus health;
  std::vector<std::string> errors;           // known counters that could not be read, with why
};

struct NeuronSnapshot {
  bool sysfs_present = false;                 // /sys/devices/virtual/neuron_device exists (the driver is loaded)
  std::optional<DriverVersion> driver;        // /sys/module/neuron/version
  std::vector<NeuronDevice> devices;          // by device number
  std::uint32_t dev_nodes = 0;                // /dev/neuron<N> entries
};

inline constexpr int kNeuronMaxDepth = 6;            // below a device directory
inline constexpr std::size_t kNeuronMaxEntries = 20000;  // per device, so a strange tree cannot stall a sweep

// Reads under `host_root` (which may be "/").
NeuronSnapshot read_neuron_sysfs(const std::filesystem::path& host_root);

// "hbm, link_efa" / "hbm,link_efa\n" -> {"hbm", "link_efa"}; empty entries dropped.
std::vector<std::string> split_components(const std::string& text);

}  // namespace ar::healthd
