// [[checks.script]]: admins' check programs (see script_check.hpp).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

// One [[checks.script]]. Exit 0 ok, 1 warn, 2 fault, anything else: broken.
struct ScriptConfig {
  std::string name;
  std::vector<std::string> command;      // argv, no shell; %n: the node name
  std::chrono::seconds timeout{30};
  std::chrono::seconds interval{300};
  Remedy action = Remedy::drain;         // for exit 2
  std::string command_where;             // "file:line:col" of `command`, for errors at load
};

struct ScriptsConfig : SettingsOf<ScriptsConfig> {
  static constexpr std::string_view kSection = "script";
  std::vector<ScriptConfig> scripts;

  void expand_node(const std::string& node) override;
  std::expected<void, std::string> resolve_on_host() override;
};

CheckSection script_section();

}  // namespace ar::healthd
