// What the engine knows of its node, typed: where the node stands, and everything its last sweep
// found. The engine hands this to its observers (the metrics, the burn-in's gate) after each sweep
// and whenever the standing changes; the status JSON of the socket is written from the same facts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vocabulary/check_result.hpp"
#include "vocabulary/device_reading.hpp"

namespace ar::healthd {

// Where the node stands: what is decided from the published status outside the engine (an admin's
// resume without --force, the burn-in's gate) reads this, never the status's JSON.
struct NodeStanding {
  bool faulty = false;     // the last sweep found a fault that takes the node out
  std::string fault_code;  // its code ("" when not faulty)
  bool own_drain = false;  // healthd drained the node and has not returned it
  bool operator==(const NodeStanding&) const = default;
};

struct NodeHealth {
  NodeStanding standing;
  std::size_t pending_actions = 0;  // journal entries not yet carried out
  std::size_t suspicions = 0;       // stalls this node was named the suspect of, counting towards the lemon rule
  std::size_t stragglers = 0;       // jobs whose ranks here run slower than the job's median, now
  std::uint64_t sweep_seq = 0;      // the last sweep's number (0: none yet)
  double sweep_ms = 0;              // how long it took
  std::vector<CheckResult> results; // its results, every check's
  // Every device the inventories listed (the GPUs, each with its health over all the checks) and
  // each result read (EFA ports, Neuron devices), in that order.
  DeviceReadings devices;
};

}  // namespace ar::healthd
