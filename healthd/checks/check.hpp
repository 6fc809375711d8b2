// What a health check is and what it says. Checks judge; they never act. What to do about a result
// is the responder's business (engine/), driven by the action a result recommends.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <functional>

#include <nlohmann/json.hpp>

#include "vocabulary/check_result.hpp"

namespace ar::healthd {

// A list of the node's devices that a kind of check's results describe, each with its health (the
// GPUs): what the status shows under `name` (`healthctl gpus`), and the same devices typed, for the
// metrics. Built from a sweep's results alone, never from the hardware. A kind offers one in the
// registry (checks/check_kind.hpp); the engine builds them all after each sweep, knowing none by name.
struct DeviceList {
  nlohmann::json listed = nlohmann::json::array();  // the status member's value
  DeviceReadings readings;
};
struct DeviceInventory {
  std::string name;  // the status member, e.g. "gpus"
  std::function<DeviceList(const std::vector<CheckResult>& results)> build;
};

// How often a check runs and how long it may take. Cheap checks run at every sweep; expensive ones
// (a DCGM diagnostic, a probe write on a network filesystem) rarely, their last results standing in
// between. A sweep asked for on demand runs every check.
struct CheckSchedule {
  std::chrono::milliseconds every{0};     // 0: at every sweep
  std::chrono::milliseconds deadline{0};  // 0: the policy's check_deadline
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string name() const = 0;
  // Runs the check once: one result per thing it judges (the GPU check judges memory, links, clocks...
  // separately, so each has its own status). May block (reads files, calls libraries); the caller
  // bounds it with a deadline. Never returns an empty vector.
  virtual std::vector<CheckResult> run() = 0;
  virtual CheckSchedule schedule() const { return {}; }
  // Called before run() in a sweep an admin asked for (healthctl check --now): an expensive check
  // that otherwise runs rarely runs now.
  virtual void requested_on_demand() {}

  // Asks for a sweep now, from any thread (an event between sweeps: a kernel-log fault line, an NVML
  // XID event); `why` is logged. The daemon posts it to its event loop.
  using JudgeNow = std::function<void(const std::string& why)>;
  // A check that is also an event source starts its watcher here, after every check is built, and
  // stops (joins) it in stop(), before the engine stops. Most checks have none.
  virtual void start(JudgeNow /*judge_now*/) {}
  virtual void stop() {}
  // A check rebuilt at reload takes over, before it starts, what the check of the same name it
  // replaces knew beyond its state file (the kernel log's read position, events seen since the
  // last save). `previous` is stopped and no longer run. Most checks have nothing to take.
  virtual void carry_over(Check& /*previous*/) {}
  // An admin fixed the cause of fault `code` (healthctl clear CODE): a check that remembers faults
  // beyond what it reads now (kernel-log lines, XID events, held for a while) forgets that one.
  // True when it had it. A check that judges only what it reads now has nothing to forget: a fault
  // still there is found again at the next sweep.
  virtual bool clear(const std::string& /*code*/) { return false; }
};

}  // namespace ar::healthd
