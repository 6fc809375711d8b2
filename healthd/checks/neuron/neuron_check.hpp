// AWS Neuron (Trainium/Inferentia): the devices against the expected count, the ECC counters the driver
// keeps per device, and the driver's own health bitmap. Three results: neuron.count, neuron.errors,
// neuron.health. What each sysfs name means, per driver generation, is in collectors/neuron_layout.hpp.
//
// The counters count since the driver was loaded, so any uncorrectable value above max_uncorrected (0
// by default) means the device has had an uncorrectable error and stays suspect until the driver is
// reloaded or the host rebooted (which also clears the counters, and so the fault).
// Codes:
//   NEURON-COUNT      fewer devices than expected: drain; more: warn.
//   NEURON-HW-ERR     an unrepairable uncorrectable error (mem_ecc_uncorrected, sram_ecc_uncorrected):
//                     drain; only repairable ones (mem_ecc_repairable_uncorrected): reboot, the cure
//                     the Neuron documentation gives.
//   NEURON-ECC-CORRECTED  correctable errors above max_corrected (unset by default: never judged).
//   NEURON-UNHEALTHY  a subsystem named in health_status/unhealthy_components: unhealthy_action (drain).
//                     A word there that is not a documented subsystem is a warning, never a drain: a
//                     format this healthd does not know must not take a fleet out.
//   NEURON-HEALTH-STALE  healthcheck_heartbeat unchanged for heartbeat_stall_s (off by default): warn.
// A device on which no uncorrectable counter can be found (and that is not an Inferentia v1, which has
// none) makes neuron.errors a broken check whose message names the driver version: never a pass.
#pragma once

#include <chrono>
#include <map>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "collectors/neuron_sysfs.hpp"
#include "checks/neuron/neuron_config.hpp"

namespace ar::healthd {

// How long each device's healthcheck_heartbeat has shown the same value.
struct NeuronHeartbeatAge {
  std::string device;
  std::uint64_t value = 0;
  std::chrono::seconds unchanged_for{0};
};

std::vector<CheckResult> judge_neuron(const NeuronSnapshot& snap, std::uint32_t expected, const NeuronConfig& config,
                                      const std::vector<NeuronHeartbeatAge>& heartbeats = {});

class NeuronCheck : public Check {
 public:
  using Clock = std::chrono::steady_clock;
  NeuronCheck(const NeuronConfig& config, std::filesystem::path host_root)
      : config_(config), host_root_(std::move(host_root)) {}
  std::string name() const override { return "neuron"; }
  std::vector<CheckResult> run() override { return run_at(Clock::now()); }
  // run() at a given time, so tests drive the heartbeat ages without sleeping.
  std::vector<CheckResult> run_at(Clock::time_point now);

 private:
  NeuronConfig config_;
  std::filesystem::path host_root_;
  std::map<std::string, std::pair<std::uint64_t, Clock::time_point>> heartbeat_since_;  // device -> value, first seen
};

// [checks.neuron]: the Neuron check: its section and factory, for the registry.
CheckKind neuron_check_kind();

}  // namespace ar::healthd
