// EFA (AWS Elastic Fabric Adapter): the devices against the expected count, every port ACTIVE, and
// the error counters' rise within a window against thresholds. Three results: efa.count, efa.ports,
// efa.counters. A node without EFA that expects none passes them all as "not applicable".
//
// Codes: EFA-COUNT (fewer devices than expected: drain; more: warn), EFA-PORT-DOWN (drain),
// EFA-COUNTER-<name> (the configured counter_action, warn by default), for port counters and device
// counters alike. A configured counter that no EFA device here has (the three network counters came
// with efa r2.17) is listed once in efa.counters as "not available on this driver", never judged.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "collectors/efa_sysfs.hpp"
#include "checks/efa/efa_config.hpp"

namespace ar::healthd {

// How much each counter rose within a sliding window. Samples are kept per key; the rise is the newest
// value less the oldest one still covering the window. A value lower than the one before (a driver
// reload resets the counters) is a new baseline, never a huge rise.
class CounterWindow {
 public:
  using Clock = std::chrono::steady_clock;
  explicit CounterWindow(std::chrono::milliseconds window) : window_(window) {}
  std::uint64_t observe(const std::string& key, std::uint64_t value, Clock::time_point now);
  // Drops the history of keys not in `keys` (a device that went away).
  void keep_only(const std::set<std::string>& keys);
  std::size_t size() const { return samples_.size(); }

 private:
  std::chrono::milliseconds window_;
  std::map<std::string, std::deque<std::pair<Clock::time_point, std::uint64_t>>> samples_;
};

struct EfaCounterRise {
  std::string device;
  std::string port;  // empty for a device-level counter
  std::string counter;
  std::uint64_t value = 0;
  std::uint64_t rise = 0;  // within the window
};

// Pure judgement of one snapshot. `expected` EFA devices (0: not expected).
std::vector<CheckResult> judge_efa(const EfaSnapshot& snap, std::uint32_t expected, const EfaConfig& config,
                                   const std::vector<EfaCounterRise>& rises);

class EfaCheck : public Check {
 public:
  EfaCheck(const EfaConfig& config, const std::filesystem::path& host_root);
  std::string name() const override { return "efa"; }
  std::vector<CheckResult> run() override { return run_at(CounterWindow::Clock::now()); }
  // run() at a given time, so tests drive the counter window without sleeping.
  std::vector<CheckResult> run_at(CounterWindow::Clock::time_point now);

 private:
  EfaConfig config_;
  std::filesystem::path host_root_;
  std::vector<std::string> counters_;
  CounterWindow window_;
};

// [checks.efa]: the EFA check: its section and factory, for the registry.
CheckKind efa_check_kind();

}  // namespace ar::healthd
