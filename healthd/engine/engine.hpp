// The engine thread: runs the checks (each bounded by a deadline) when asked, hands the results to
// the responder (which decides, into the journal), and has the journal carried out (SlurmActions).
// The event loop thread never blocks on a check or on Slurm; it only queues requests and its view of
// the running jobs here, and reads the status snapshot.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/check.hpp"
#include "engine/responder.hpp"

namespace ar::healthd {

class Engine {
 public:
  // `inventories`: the device lists built after each sweep into the status (checks/registry.hpp
  // device_inventories; none in tests that do not look at them).
  Engine(std::vector<std::shared_ptr<Check>> checks, Responder& responder, std::chrono::milliseconds check_deadline,
         std::vector<DeviceInventory> inventories = {});
  ~Engine();

  void start();
  void stop();

  // Queues a sweep followed by the responder's judgement. A sweep runs the checks that are due (see
  // CheckSchedule) and reuses the others' last results; a triggered or forced sweep runs them all.
  // Returns the sweep's number; status() reports the number of the last sweep done as "sweep_seq".
  // A poll sweep runs only the checks with a cadence of their own that are due (EC2 notices every few
  // seconds, admin scripts, storage probes); it acts on faults but is not a healthy pass towards
  // resuming a node, so polling fast does not shorten the way back.
  // The sweep judges the jobs of the engine's view (set_jobs) as it was when the sweep was asked for.
  // Safe from any thread: an event source (the kernel log, NVML events) asks from its own.
  std::uint64_t request_sweep(std::string why, std::optional<StepFailure> trigger = std::nullopt, bool force = false,
                              bool poll = false);
  // What runs on this node now: the job registry's running jobs (engine/health_service.hpp
  // running_jobs), handed over by the event loop, which owns the registry, after every change. The
  // engine keeps its own view so that an event reaches it without a detour through the event loop.
  void set_jobs(std::vector<LocalJob> jobs);
  // What an event source (a check that watches the kernel log or NVML events, Check::start) calls
  // from its own thread to have the node judged now: a sweep request here.
  Check::JudgeNow judge_now();

  // An event for a job's timeline, recorded on the engine thread before its next piece of work (the
  // event loop hands it over rather than touch the timeline itself).
  void note(std::uint32_t job_id, TimelineEvent event);

  // New policy (SIGHUP): applied on the engine thread between two pieces of work.
  void reconfigure(const PolicyConfig& policy);
  // New checks (SIGHUP with a changed [checks.*] section), run from the next sweep on. On the engine
  // thread, between two sweeps (so no old check runs any more): each new check takes over what the
  // old one of its name knew (Check::carry_over; the old ones must be stopped already), is started
  // with `judge_now`, and runs at the next sweep. A check still hung from an earlier sweep keeps its
  // guard: a new one of its name is not run until the old run returns.
  void replace_checks(std::vector<std::shared_ptr<Check>> checks, Check::JudgeNow judge_now);

  // The last result of every check and the responder's state, as of the last sweep: the socket's
  // `status`, written from the typed health at each call.
  nlohmann::json status() const;
  // Whether the last sweep's results hold `code` (checks/check.hpp held_codes): what an admin may clear.
  bool holds_code(const std::string& code) const;

  // An admin's action through healthctl, carried out on the engine thread before its next sweep
  // (see Responder::admin_drain). `text`: the drain's reason, or the code to clear.
  struct AdminAction {
    enum class Kind { drain, resume, clear } kind = Kind::drain;
    std::string text;
    bool force = false;
    std::uint32_t uid = 0;      // who asked
    std::uint64_t request = 0;  // the request's id, carried to its notice
  };
  void admin(AdminAction action);
  // On the engine thread only (an admin's clear, a cure step that may have cured `code`): every check
  // that is not hung in a run forgets `code`. Answers how many forgot it, and how many were not asked.
  std::pair<std::size_t, std::size_t> forget(const std::string& code);

  // Called on the engine thread with the node's health, typed (vocabulary/node_health.hpp), after
  // every sweep and whenever the node's standing or pending actions change (the metrics and the
  // burn-in's gate follow it). Set before start().
  using StatusObserver = std::function<void(const NodeHealth& health)>;
  void on_status(StatusObserver observer) { on_status_ = std::move(observer); }
  // The node's standing as last published (any thread).
  NodeStanding standing() const;

 private:
  struct SweepRequest {
    std::string why;
    std::vector<LocalJob> jobs;  // the engine's view when it was asked for
    std::optional<StepFailure> trigger;
    bool force = false;
    std::uint64_t seq = 0;
    bool poll = false;
  };

  // What the engine remembers of one check between sweeps.
  struct CheckState {
    std::vector<CheckResult> last;
    std::chrono::steady_clock::time_point last_run{};
    // Still running past its deadline: not started again until it returns.
    std::optional<std::shared_future<std::vector<CheckResult>>> hung;
  };

  // New checks waiting for the engine thread (replace_checks).
  struct Replacement {
    std::vector<std::shared_ptr<Check>> checks;
    Check::JudgeNow judge_now;
  };

  // What the engine thread takes from the others at each turn of its loop.
  struct Inbox {
    std::optional<SweepRequest> request;
    std::optional<Replacement> replacement;
    std::deque<std::pair<std::uint32_t, TimelineEvent>> notes;
    std::deque<AdminAction> admin;
    bool stop = false;
  };

  void loop();
  Inbox wait_for_work();
  bool run_sweep(const SweepRequest& request, WallTime now);
  void publish_status(bool changed);
  void abandon_hung();
  void take_checks(Replacement replacement);
  std::vector<CheckResult> sweep(bool everything, bool poll);
  std::vector<CheckResult> run_bounded(const std::shared_ptr<Check>& check, CheckState& state);

  std::vector<std::shared_ptr<Check>> checks_;
  Responder& responder_;   // decides: the sweep's results into journal entries
  SlurmActions& actions_;  // does: the journal entries carried out (the responder's)

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<SweepRequest> requests_;
  std::vector<LocalJob> jobs_;  // the running jobs, as the event loop last handed them over (set_jobs)
  std::deque<std::pair<std::uint32_t, TimelineEvent>> notes_;
  std::uint64_t next_seq_ = 1;
  bool stopping_ = false;
  bool run_ended_ = false;  // a background run for a journal entry ended (SlurmActions::runs_ended)
  std::optional<PolicyConfig> new_policy_;
  std::optional<Replacement> new_checks_;
  std::deque<AdminAction> admin_;
  StatusObserver on_status_;
  void carry_out(const AdminAction& action);
  std::chrono::milliseconds check_deadline_;
  const std::vector<DeviceInventory> inventories_;
  // What status() and the observers are given, under mutex_: the typed health, and beside it what
  // only the socket's JSON shows (the inventories' lists, why the last sweep ran, the responder's
  // own status).
  NodeHealth health_;
  std::vector<std::pair<std::string, nlohmann::json>> listed_;  // by inventory name ("gpus")
  std::string last_sweep_;
  std::optional<std::uint32_t> last_sweep_job_;  // whose step asked for it
  nlohmann::json responder_status_ = nlohmann::json::object();
  std::set<std::string> held_codes_;  // of the last sweep

  std::map<std::string, CheckState> state_;  // by check name; engine thread only
  std::thread thread_;
};

}  // namespace ar::healthd
