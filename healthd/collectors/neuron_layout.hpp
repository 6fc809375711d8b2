// What the AWS Neuron driver (aws-neuronx-dkms) documents about its sysfs tree, by driver generation,
// with where each fact comes from. The reader (neuron_sysfs) looks for these names; the check
// (checks/neuron_check) judges them by kind. Nothing here reads a file.
//
// Generations (driver version from /sys/module/neuron/version, the module's MODULE_VERSION):
//   before 2.14   no ECC counters in sysfs at all: the check is blind and says so.
//   2.14 - 2.27   /sys/devices/virtual/neuron_device/neuron<N>/stats/hardware/
//                   mem_ecc_uncorrected, sram_ecc_uncorrected, mem_ecc_repairable_uncorrected
//                 each a plain file holding one number ("%u\n"), not a total/present counter directory
//                 (aws-neuron-driver neuron_sysfs_metrics.c: ecc_attrs_info_tbl, attr type OTHER;
//                 nsysfsmetric_generic_metric_attr_show). Source read: aws-neuronx-dkms 2.24.7.0.
//                 Inferentia (v1) devices have none: nsysfsmetric_add_ecc_nodes_v1 adds nothing.
//   2.28 - 2.30   as above, plus the directory stats/hardware/health_status/ ("cached device health
//                 metrics", Neuron SDK release notes, driver 2.28.0.0). From 2.30.2 it holds
//                 unhealthy_components (comma-separated failing subsystems from the firmware health
//                 bitmap) and healthcheck_heartbeat, on Trainium2 and Trainium3; and stats/hardware gains
//                 the correctable counters mem_ecc_corrected and sram_ecc_corrected (release notes,
//                 Neuron 2.32.0, driver 2.30.2).
//   2.31 and on   "reorganized the Neuron sysfs tree and moved several nodes to new paths ... not
//                 backwards compatible" (Neuron Sysfs User Guide, Neuron 2.33). The new paths were
//                 not in any source this project could read (see README, "Trainium and EFA drivers"),
//                 so the reader finds the documented names wherever they are under the device
//                 directory, and a device where no uncorrectable counter is found is a broken check
//                 naming the driver version, never a silent pass.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "driver_version.hpp"

namespace ar::healthd {

enum class NeuronCounterKind {
  uncorrectable,  // the memory lost data: the device needs replacing (drain)
  repairable,     // uncorrectable, but the driver can repair the row on reload: reboot
  correctable,    // corrected by ECC: data for trends, a warning past the admin's threshold
};

struct NeuronCounterSpec {
  std::string_view name;     // the sysfs file name
  NeuronCounterKind kind;
  std::string_view meaning;  // for messages: "uncorrectable HBM ECC errors"
  std::array<unsigned, 3> since;  // the first driver release known to have it ({2, 14, 0})
  std::string_view source;
};

std::span<const NeuronCounterSpec> neuron_counter_specs();
const NeuronCounterSpec* find_neuron_counter(std::string_view name);

// The subsystems unhealthy_components names (release notes, driver 2.30.2).
std::span<const std::string_view> neuron_health_components();

enum class NeuronLayout { unknown_version, before_ecc, ecc_counters, health_status, reorganised };
NeuronLayout neuron_layout_for(const std::optional<DriverVersion>& version);
// "2.28-2.30 (stats/hardware with health_status)"
std::string_view describe(NeuronLayout layout);

// The driver releases that added health_status and filled it (for "not available on this driver").
inline constexpr std::array<unsigned, 3> kNeuronHealthStatusSince = {2, 28, 0};
inline constexpr std::array<unsigned, 3> kNeuronUnhealthyComponentsSince = {2, 30, 2};

// Where the version is read, for messages.
inline constexpr std::string_view kNeuronVersionFile = "/sys/module/neuron/version";

}  // namespace ar::healthd
