// [cure] and [[cure.chain]]: what healthd does after it drained a node, beyond waiting. Each fault's
// cure is a short chain of steps (reset_gpu, reboot, replace) walked while a step does not cure it;
// a deep check may stand between a cured node and its return, and may run on idle nodes (burn-in).
// policy/cure_plan.hpp picks the chain of a fault; actions/slurm_actions carries the steps out.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "vocabulary/action.hpp"

namespace ar::healthd {

// The cure of one fault code, or of one XID: [[cure.chain]] code = "GPU-ROW-REMAP-PENDING" (or
// xid = 48), steps = ["reset_gpu", "reboot", "replace"]. No steps: drain only (wait for the fault to
// clear, or for an admin).
struct CureChain {
  std::string code;
  std::optional<unsigned> xid;
  std::vector<Action> steps;
  std::string where;  // "file:line:col" of `steps`, for messages
};

struct CureConfig {
  std::vector<CureChain> chains;  // first match wins: a code, then an XID; else the catalogue's default
  // The GPU reset: argv, no shell; %g is the GPU's PCI bus id as NVML gives it, %n the node. A name
  // is looked up at load; one not found leaves each reset failing with that message (next step).
  std::vector<std::string> reset_command = {"nvidia-smi", "--gpu-reset", "-i", "%g"};
  std::chrono::seconds reset_timeout{120};
  // How long a reset waits for the node to be idle (its jobs requeued or ended) and the GPU free of
  // processes; past it the reset counts as failed and the chain goes on.
  std::chrono::seconds reset_wait{600};
  // Persistence mode on blocks a reset (said so, the chain goes on); false: reset anyway (drivers
  // that reset a GPU in persistence mode, or a reset_command that turns it off first).
  bool reset_blocked_by_persistence = true;
  // The deep check: a long test of the node (argv, no shell, %n): the DCGM diagnostic
  // (["dcgmi", "diag", "-r", "3"]) or an admin's script (an NCCL all-reduce on the node). Exit 0
  // passes. Empty: none.
  std::vector<std::string> deep_check;
  std::chrono::seconds deep_check_timeout{1800};
  // Run it before a node healthd drained returns to service (after a reset, a reboot, a fault that
  // cleared); a failure keeps the node out with the test's message.
  bool deep_check_before_return = true;
  // Burn-in: on a node idle (no job) this long, run the deep check at most every burn_in_every, so a
  // fault that only shows under load is found before a job lands. A job landing stops it at once.
  // 0: off.
  std::chrono::seconds burn_in_idle{0};
  std::chrono::seconds burn_in_every{std::chrono::hours(24)};
};

}  // namespace ar::healthd
