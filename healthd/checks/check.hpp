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

#include "vocabulary/remedy.hpp"

namespace ar::healthd {

enum class Status {
  ok,      // healthy
  warn,    // worth telling, not worth taking the node out
  fault,   // the node must not run jobs: see the action
  error,   // the check itself failed (crashed, timed out, missing tool): says nothing about the node
};

std::string to_string(Status s);

// The status a finding carries given the action it calls for: none passes, warn (and an
// application's fault, restart_app) warns, the rest fault.
Status status_for(Remedy a);

// A fault announced ahead of time (an EC2 maintenance event, a spot notice): before acting, ask the
// auto-resume jobs on the node to checkpoint (send `signal`), and act only `grace` later.
struct CheckpointFirst {
  std::string signal = "USR1";  // as scancel --signal names it
  std::chrono::seconds grace{0};
};

struct CheckResult {
  std::string check;       // the check's name, e.g. "kernel_log"
  Status status = Status::ok;
  std::string code;        // stable fault code, e.g. "KMSG-MCE"
  std::string message;     // one line for people and for the Slurm reason
  Remedy action = Remedy::none;
  std::chrono::milliseconds duration{0};
  std::chrono::system_clock::time_point at;
  nlohmann::json detail = nlohmann::json::object();
  std::optional<CheckpointFirst> checkpoint_first;  // fault only
  // False: what the check judges is not on this node and not expected (no EFA, no GPU): a pass that
  // says nothing, shown as "n/a" (to_json: "applicable": false).
  bool applicable = true;
  // The GPUs a fault is on, as their PCI bus ids (NVML's "00000000:3B:00.0" or the kernel log's
  // "0000:3b:00"): what a GPU reset resets (policy/cure_plan.hpp). Empty: the node, or not known.
  std::vector<std::string> gpus;
  // The XID a fault is (the XID check's results): which [[cure.chain]] with `xid` applies.
  std::optional<unsigned> xid;
  // Where a result holds more than its `code`: every code it holds that an admin may clear
  // (healthctl clear), as the kernel log's active faults and the XIDs held. Typed, so that no
  // decision reads them back out of `detail`.
  std::vector<std::string> also_held;

  nlohmann::json to_json() const;
};

// The codes `results` hold that an admin may clear: each result's code unless it passed, and every
// code it holds besides (CheckResult::also_held).
std::set<std::string> held_codes(const std::vector<CheckResult>& results);

// A list of the node's devices that a kind of check's results describe, each with its health (the
// GPUs): what the status shows under `name` (`healthctl gpus`) and the metrics export per device.
// Built from a sweep's results alone, never from the hardware. A kind offers one in the registry
// (checks/check_kind.hpp); the engine builds them all after each sweep, knowing none by name.
struct DeviceInventory {
  std::string name;  // the status member, e.g. "gpus"
  std::function<nlohmann::json(const std::vector<CheckResult>& results)> build;
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
