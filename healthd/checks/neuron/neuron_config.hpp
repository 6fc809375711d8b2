// [checks.neuron]: AWS Trainium/Inferentia devices (see neuron_check.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct NeuronConfig : SettingsOf<NeuronConfig> {
  static constexpr std::string_view kSection = "neuron";
  bool enabled = true;
  std::optional<std::uint32_t> expected_devices;  // as for EFA
  std::uint64_t max_uncorrected = 0;              // per device and counter; above it is a fault
  // Correctable ECC errors (mem_ecc_corrected, sram_ecc_corrected, driver 2.30.2 and later) are data:
  // shown, never judged unless the admin sets a limit; above it, corrected_action (warn by default).
  std::optional<std::uint64_t> max_corrected;
  Remedy corrected_action = Remedy::warn;
  // What a subsystem named in the driver's unhealthy_components (health_status) calls for.
  Remedy unhealthy_action = Remedy::drain;
  // healthcheck_heartbeat unchanged for this long: a warning that the health bitmap may be stale.
  // 0 (the default): not judged, only shown; the driver does not document how often it moves.
  std::chrono::seconds heartbeat_stall{0};

  void apply_profile(const InstanceProfile& profile) override {
    if (!expected_devices) expected_devices = profile.neuron_devices;
  }
};

CheckSection neuron_section();

}  // namespace ar::healthd
