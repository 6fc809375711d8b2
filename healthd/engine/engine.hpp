// The engine thread: runs the checks (each bounded by a deadline) when asked, hands the results to
// the responder, and carries out the journal. The event loop thread never blocks on a check or on
// Slurm; it only queues requests here and reads the status snapshot.
#pragma once

#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/check.hpp"
#include "engine/responder.hpp"

namespace ar::healthd {

class Engine {
 public:
  Engine(std::vector<std::shared_ptr<Check>> checks, Responder& responder, std::chrono::milliseconds check_deadline);
  ~Engine();

  void start();
  void stop();

  // Queues a sweep of every check followed by the responder's judgement.
  void request_sweep(std::string why, std::vector<LocalJob> jobs, std::optional<StepFailure> trigger = std::nullopt);

  // New policy (SIGHUP): applied on the engine thread between two pieces of work.
  void reconfigure(const PolicyConfig& policy);

  // The last result of every check and the responder's state, as of the last sweep.
  nlohmann::json status() const;

 private:
  struct SweepRequest {
    std::string why;
    std::vector<LocalJob> jobs;
    std::optional<StepFailure> trigger;
  };

  void loop();
  std::vector<CheckResult> sweep();
  CheckResult run_bounded(const std::shared_ptr<Check>& check);

  std::vector<std::shared_ptr<Check>> checks_;
  Responder& responder_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<SweepRequest> requests_;
  bool stopping_ = false;
  std::optional<PolicyConfig> new_policy_;
  std::chrono::milliseconds check_deadline_;
  nlohmann::json status_ = nlohmann::json::object();

  // A check still running past its deadline: not started again until it returns.
  std::map<std::string, std::shared_future<CheckResult>> hung_;
  std::thread thread_;
};

}  // namespace ar::healthd
