// The host itself: online CPUs and memory against what the instance should have, the size of
// /dev/shm (NCCL and PyTorch data loaders live in it), whether the clock is synchronised, and whether
// the daemons a node needs (munged, slurmd) run. One result per area: node.cpus, node.memory,
// node.shm, node.clock, and node.process.<name> for each required process.
//
// An expectation left unset is not judged (the result passes and shows the value read).
// Codes: NODE-CPU-COUNT, NODE-MEM, NODE-SHM, NODE-DAEMON-<name> (drain), NODE-CLOCK-UNSYNC
// (clock_action, warn by default).
#pragma once

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "collectors/node_info.hpp"
#include "checks/node/node_config.hpp"

namespace ar::healthd {

std::vector<CheckResult> judge_node(const NodeSnapshot& snap, const NodeConfig& config);

class NodeCheck : public Check {
 public:
  NodeCheck(const NodeConfig& config, std::filesystem::path host_root) : config_(config), host_root_(std::move(host_root)) {}
  std::string name() const override { return "node"; }
  std::vector<CheckResult> run() override {
    return judge_node(read_node_info(host_root_, config_.clock_action != Remedy::none, &processes_,
                                     config_.required_processes),
                      config_);
  }

 private:
  NodeConfig config_;
  ProcessFinder processes_;
  std::filesystem::path host_root_;
};

// [checks.node]: the host check: its section and factory, for the registry.
CheckKind node_check_kind();

}  // namespace ar::healthd
