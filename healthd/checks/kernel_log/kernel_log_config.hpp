// [checks.kernel_log] and [[checks.kernel_log.rule]]: the kernel-log check's settings and reader.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "vocabulary/remedy.hpp"
#include "collectors/kernel_log_reader.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

// A kernel-log pattern rule: a record of the kernel's own (facility 0) at `max_level` or more severe
// whose message matches `pattern` (RE2 syntax) is a fault `code`. Anchored, the pattern must match
// where the message starts, where a driver puts its own prefix: user-space text reaches the kernel
// log only further in (a crashing program's file name in the kernel's segfault report) or at levels
// no driver fault uses (that report is KERN_INFO).
struct KernelLogRule {
  std::string code;
  std::string pattern;
  Remedy action = Remedy::drain;
  std::string message;  // empty: the matched record's text itself
  bool anchored = true;
  int max_level = kLevelNotice;
};

struct KernelLogConfig : SettingsOf<KernelLogConfig> {
  static constexpr std::string_view kSection = "kernel_log";
  bool enabled = true;
  std::filesystem::path path = "/dev/kmsg";  // read under the host root
  std::chrono::milliseconds poll_interval{250};
  // How long a matched fault line keeps the check faulty. Log lines are events: without a hold a
  // fault would vanish at the next sweep; without an end, a stale line would keep a node out forever.
  std::chrono::seconds hold{600};
  bool default_rules = true;             // the built-in rules (machine check, Neuron, EFA, I/O)
  std::vector<KernelLogRule> rules;      // the admin's own, checked before the built-in ones
};

CheckSection kernel_log_section();

}  // namespace ar::healthd
