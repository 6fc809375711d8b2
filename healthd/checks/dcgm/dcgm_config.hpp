// [checks.dcgm]: the DCGM diagnostic's settings and reader.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct DcgmConfig : SettingsOf<DcgmConfig> {
  static constexpr std::string_view kSection = "dcgm";
  bool enabled = false;
  std::string dcgmi = "dcgmi";                 // a bare name is resolved at load in the children's PATH
  std::uint32_t level = 1;                     // dcgmi diag -r: 1 quick, 2 medium, 3 long, 4 extended
  std::chrono::seconds timeout{600};
  std::chrono::seconds interval{24 * 3600};    // at most one diagnostic per interval (idle node)
  Remedy action = Remedy::drain;               // a failed test
  std::string dcgmi_where;                     // "file:line:col" of the key (or the file), for errors

  std::expected<void, std::string> resolve_on_host() override;
};

CheckSection dcgm_section();

}  // namespace ar::healthd
