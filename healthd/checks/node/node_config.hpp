// [checks.node]: the host itself (see node_check.hpp). Unset expectations are not judged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct NodeConfig : SettingsOf<NodeConfig> {
  static constexpr std::string_view kSection = "node";
  bool enabled = true;
  std::optional<std::uint32_t> expected_cpus;  // online CPUs; unset: the profile's vCPUs
  std::optional<double> min_memory_gib;        // MemTotal; unset: the profile's memory less memory_slack_pct
  double memory_slack_pct = 10;                // the kernel keeps part of the nominal memory for itself
  double min_shm_gib = 0;                      // size of /dev/shm; 0: not judged
  Remedy clock_action = Remedy::warn;          // clock not synchronised (adjtimex); none: not judged
  std::vector<std::string> required_processes = {"munged", "slurmd"};  // by /proc/*/comm

  void apply_profile(const InstanceProfile& profile) override {
    if (!expected_cpus && profile.cpus > 0) expected_cpus = profile.cpus;
    if (!min_memory_gib && profile.memory_gib > 0) min_memory_gib = profile.memory_gib * (1.0 - memory_slack_pct / 100.0);
  }
};

CheckSection node_section();

}  // namespace ar::healthd
