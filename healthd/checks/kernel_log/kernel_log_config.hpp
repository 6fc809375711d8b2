// [checks.kernel_log] and [[checks.kernel_log.rule]]: the kernel-log check's settings and reader.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "actions/action.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

// A kernel-log pattern rule: a line matching `pattern` (RE2 syntax) is a fault `code`.
struct KernelLogRule {
  std::string code;
  std::string pattern;
  Action action = Action::drain;
  std::string message;  // empty: the matched line itself
};

struct KernelLogConfig : SettingsOf<KernelLogConfig> {
  static constexpr std::string_view kSection = "kernel_log";
  bool enabled = true;
  std::filesystem::path path = "/dev/kmsg";  // read under the host root
  std::chrono::milliseconds poll_interval{250};
  // How long a matched fault line keeps the check faulty. Log lines are events: without a hold a
  // fault would vanish at the next sweep; without an end, a stale line would keep a node out forever.
  std::chrono::seconds hold{600};
  bool default_rules = true;             // the built-in rules (XID, machine check, Neuron, EFA, I/O)
  std::vector<KernelLogRule> rules;      // the admin's own, checked before the built-in ones
};

CheckSection kernel_log_section();

}  // namespace ar::healthd
