// Burn-in: on a node idle for [cure] burn_in_idle_s (no job here, as the job registry counts them),
// the admin's deep check ([cure] deep_check: the DCGM diagnostic, an NCCL all-reduce) runs at most
// every burn_in_every_s, so a fault that only shows under load is found before a job lands (Google's
// cluster health scanner and HyperPod's deep health checks do this). A job landing stops it at once
// (the program's tree is killed within 100 ms); a stopped run is no verdict and is tried again once
// the node is idle again. A failed run is a fault (BURN-IN, drain) that stands until an admin clears
// it (healthctl clear BURN-IN): no burn-in runs on a node that is faulty or held out by healthd.
//
// It is a check so that its verdict goes where every verdict goes; it is built by the daemon from
// [cure], not by a [checks.*] section. The program runs on a thread of its own; run() only reports.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/process.hpp"
#include "checks/check.hpp"
#include "config/cure_config.hpp"

namespace ar::healthd {

class BurnInCheck : public Check {
 public:
  using Clock = std::chrono::steady_clock;
  // How the program runs (argv, env, timeout, cancel): run_process, or a test's stand-in.
  using Runner = std::function<std::expected<ProcessResult, std::string>(
      const std::vector<std::string>& argv, const std::vector<std::string>& env, std::chrono::milliseconds timeout,
      const std::function<bool()>& cancel)>;

  // `out`: the node is faulty or held out by healthd (a drain, a cure under way), as the engine last
  // published it: no burn-in then (it would hold the GPU a reset needs, or collide with the deep check).
  BurnInCheck(CureConfig config, std::string node, std::shared_ptr<const std::atomic<std::size_t>> jobs_here,
              std::shared_ptr<const std::atomic<bool>> out, Runner runner = {});
  ~BurnInCheck() override;

  std::string name() const override { return "burn_in"; }
  std::vector<CheckResult> run() override;
  void stop() override;
  bool clear(const std::string& code) override;

  // Whether [cure] asks for a burn-in at all.
  static bool wanted(const CureConfig& c) { return c.burn_in_idle.count() > 0 && !c.deep_check.empty(); }

 private:
  void start_run(Clock::time_point now);
  bool busy() const { return jobs_here_->load() > 0 || out_->load() || stopping_.load(); }

  CureConfig config_;
  std::string node_;
  std::shared_ptr<const std::atomic<std::size_t>> jobs_here_;
  std::shared_ptr<const std::atomic<bool>> out_;
  Runner runner_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;  // below: run() and the run's thread
  std::thread thread_;
  bool running_ = false;
  std::optional<std::expected<ProcessResult, std::string>> finished_;
  std::optional<Clock::time_point> idle_since_;
  std::optional<Clock::time_point> last_run_;   // the last run that gave a verdict
  std::optional<CheckResult> failure_;          // stands until a run passes or an admin clears it
  std::string last_;                            // what the last run came to
};

}  // namespace ar::healthd
