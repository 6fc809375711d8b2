// Host memory ECC, from the kernel's EDAC memory-controller counters (collectors/edac_sysfs.hpp).
// Two results, so a correctable-error warning never hides (or is hidden by) an uncorrectable drain:
//   edac.uncorrected  any uncorrectable error counted on a memory controller or on one of its DIMMs:
//                     EDAC-UE, uncorrected_action (drain by default). The message names the
//                     controller and the DIMM (its label, when the driver or an admin set one).
//   edac.corrected    correctable errors: always shown (per controller and DIMM, the count and its
//                     rise within corrected_window_s); judged only when max_corrected_rise is set: a
//                     controller whose ce_count rose by more than it within the window is EDAC-CE,
//                     corrected_action (warn by default).
// The counters count since the EDAC driver loaded (or an admin wrote reset_counters), so an
// uncorrectable error keeps the node faulty until the host reboots or the counters are reset: the
// memory that had it stays suspect. A counter that falls (a reset, a driver reload) starts the
// correctable window over from the new value; the first reading after healthd starts is the baseline,
// so errors counted before it are shown in the total but never count as a rise.
// No /sys/devices/system/edac/mc, or one without any mc<N> (no EDAC driver for this platform: most
// VMs): both results pass as "not applicable". A counter that cannot be read, or a tree that is not
// what the kernel makes, is a broken check (Status::error, never a drain), unless a fault was found.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "checks/edac/edac_config.hpp"
#include "collectors/edac_sysfs.hpp"

namespace ar::healthd {

// How much each counter rose within a sliding window: the newest value less the one it had when the
// window began (or the first one seen, if that is later). A value lower than the one before (reset
// counters, a driver reload) is a new baseline, never a huge rise. Like the EFA check's CounterWindow,
// with its memory bounded for windows of up to 30 days: a sample is kept only when the value changed,
// and at most one per span of window/128 (a later change in the newest sample's span replaces it).
// So at most 130 samples per key; a replaced sample can only make a later rise look larger (by what
// the counter did within window/128), never smaller.
class EdacRiseWindow {
 public:
  using Clock = std::chrono::steady_clock;
  explicit EdacRiseWindow(std::chrono::seconds window);
  std::uint64_t observe(const std::string& key, std::uint64_t value, Clock::time_point now);
  // Drops the history of keys not in `keys` (a controller or DIMM that went away).
  void keep_only(const std::set<std::string>& keys);
  std::size_t keys() const { return samples_.size(); }
  std::size_t samples(const std::string& key) const;

 private:
  std::chrono::milliseconds window_;
  std::chrono::milliseconds granularity_;
  std::map<std::string, std::deque<std::pair<Clock::time_point, std::uint64_t>>> samples_;
};

// Judges one snapshot; `window` holds the correctable counters' history (keys "mc0" and "mc0/dimm3"),
// observed at `now`. Returns edac.uncorrected, edac.corrected.
std::vector<CheckResult> judge_edac(const EdacSnapshot& snap, const EdacConfig& config, EdacRiseWindow& window,
                                    EdacRiseWindow::Clock::time_point now);

class EdacCheck : public Check {
 public:
  using Clock = EdacRiseWindow::Clock;
  EdacCheck(const EdacConfig& config, std::filesystem::path host_root);
  std::string name() const override { return "edac"; }
  std::vector<CheckResult> run() override { return run_at(Clock::now()); }
  // run() at a given time, so tests drive the window without sleeping.
  std::vector<CheckResult> run_at(Clock::time_point now);

 private:
  EdacConfig config_;
  std::filesystem::path host_root_;
  EdacRiseWindow window_;
};

// [checks.edac]: the EDAC check: its section and factory, for the registry.
CheckKind edac_check_kind();

}  // namespace ar::healthd
