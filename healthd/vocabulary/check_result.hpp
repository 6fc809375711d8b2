// What a check says, typed: its verdict, the code and message people and Slurm see, what it calls
// for, and what it read of each device. The engine hands these to the responder and the metrics;
// JSON (to_json) is only what the socket, the state files and healthctl see.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vocabulary/device_reading.hpp"
#include "vocabulary/remedy.hpp"
#include "vocabulary/status.hpp"

namespace ar::healthd {

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
  // What the check read of each device it looked at (EFA ports, Neuron devices), and the XIDs it
  // holds: what the metrics show per device. Typed, beside the same figures in `detail`.
  DeviceReadings devices;
  std::vector<XidTally> xids;
  // The GPU check's nvml result: what each GPU is doing (for a stalled job's evidence; not shown).
  std::vector<GpuActivity> gpu_activity;

  nlohmann::json to_json() const;
};

// The codes `results` hold that an admin may clear: each result's code unless it passed, and every
// code it holds besides (CheckResult::also_held).
std::set<std::string> held_codes(const std::vector<CheckResult>& results);

}  // namespace ar::healthd
