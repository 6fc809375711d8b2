// [checks.efa]: EFA devices, their ports and their error counters (see efa_check.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct EfaConfig : SettingsOf<EfaConfig> {
  static constexpr std::string_view kSection = "efa";
  bool enabled = true;
  // How many EFA devices the node must have. Unset: the instance profile's count, else 0 (not expected:
  // a node without EFA passes as "not applicable").
  std::optional<std::uint32_t> expected_devices;
  // Error counters judged by how much they rose within the window; a fall (driver reload) starts over.
  std::chrono::seconds counter_window{300};
  // Port counters (ports/<n>/hw_counters) and device counters (hw_counters: cmds_err,
  // no_completion_cmds) share one table: the efa driver's names for the two never overlap.
  std::map<std::string, std::uint64_t> counter_thresholds = {
      {"rdma_read_wr_err", 10},          {"rdma_write_wr_err", 10},        {"unresponsive_remote_events", 10},
      {"impaired_remote_conn_events", 10}, {"retrans_timeout_events", 100}, {"rx_drops", 10000},
      {"cmds_err", 10},                  {"no_completion_cmds", 0},
  };
  Remedy counter_action = Remedy::warn;  // a counter past its threshold: warn by default (network-wide events)

  void apply_profile(const InstanceProfile& profile) override {
    if (!expected_devices) expected_devices = profile.efa_devices;
  }
};

CheckSection efa_section();

}  // namespace ar::healthd
