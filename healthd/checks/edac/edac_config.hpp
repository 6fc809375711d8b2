// [checks.edac]: host memory ECC through the kernel's EDAC counters (see edac_check.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct EdacConfig : SettingsOf<EdacConfig> {
  static constexpr std::string_view kSection = "edac";
  bool enabled = true;
  // Any uncorrected error counted on a memory controller (since the EDAC driver loaded, or since an
  // admin wrote its reset_counters): this action.
  Remedy uncorrected_action = Remedy::drain;
  // Correctable errors are data, shown and never judged, unless a limit is set: a memory controller
  // whose ce_count rose by more than this within corrected_window is a finding (corrected_action).
  std::optional<std::uint64_t> max_corrected_rise;
  Remedy corrected_action = Remedy::warn;
  std::chrono::seconds corrected_window{3600};
};

CheckSection edac_section();

}  // namespace ar::healthd
