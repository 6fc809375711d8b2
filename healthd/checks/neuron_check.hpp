// AWS Neuron (Trainium/Inferentia): the devices against the expected count, and the uncorrectable ECC
// counters the driver keeps per device (HBM, SRAM). Two results: neuron.count and neuron.errors.
//
// The counters count since the driver was loaded, so any value above max_uncorrected (0 by default)
// means the device has had an uncorrectable error and stays suspect until the driver is reloaded or
// the host rebooted (which also clears the counters, and so the fault).
// Codes: NEURON-COUNT (fewer devices than expected: drain; more: warn), NEURON-HW-ERR (an unrepairable
// uncorrected error, mem_ecc_uncorrected or sram_ecc_uncorrected: drain; only repairable ones,
// mem_ecc_repairable_uncorrected: reboot, which the Neuron documentation gives as the cure).
#pragma once

#include "check.hpp"
#include "collectors/neuron_sysfs.hpp"
#include "config/config.hpp"

namespace ar::healthd {

std::vector<CheckResult> judge_neuron(const NeuronSnapshot& snap, std::uint32_t expected, const NeuronConfig& config);

class NeuronCheck : public Check {
 public:
  NeuronCheck(const NeuronConfig& config, std::filesystem::path host_root)
      : config_(config), host_root_(std::move(host_root)) {}
  std::string name() const override { return "neuron"; }
  std::vector<CheckResult> run() override {
    return judge_neuron(read_neuron_sysfs(host_root_), config_.expected_devices.value_or(0), config_);
  }

 private:
  NeuronConfig config_;
  std::filesystem::path host_root_;
};

}  // namespace ar::healthd
