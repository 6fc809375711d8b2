// The cure chain's next move (policy/cure_plan.hpp picks the chain, actions/cure_walk.cpp carries
// out each step): from the chain's saved progress (state/journal.hpp CureProgress) and what a sweep
// and Slurm show, typed, into what happens next. Calls nothing: cure_walk.cpp asks Slurm, asks
// here, and carries the answer out; tests/unit/cure_policy_test.cpp is the table.
#pragma once

#include <cstdint>
#include <string>

#include "state/journal.hpp"

namespace ar::healthd::policy {

// What Slurm shows of the node, and whether it booted since the cure's reboot was asked for.
struct NodeSighting {
  bool slurm_answered = false;  // false: Slurm did not answer; the next two say nothing
  bool drained = false;         // drained or draining
  bool reboot_pending = false;  // a reboot asked of Slurm that slurmd has not done
  bool rebooted = false;        // this boot is not the one the cure's reboot was asked in
};

enum class CureMove : std::uint8_t {
  stay,             // nothing now
  admin_took_over,  // back in service without a reboot of ours: the cure ends, the admin's decision stands
  run_step,         // the current step is journalled (again: one under way lost its entry to a restart)
  next_step,        // the current step did not cure (`why`): the chain goes on (after_failed_step)
};

struct CureDecision {
  CureMove move = CureMove::stay;
  std::string why;  // next_step: what the step came to
};

// The chain has stopped (every step tried, or the current one cannot run here): only an admin moves it.
bool chain_stopped(const CureProgress& c);

// A reboot the cure asked for is under way: a healthy sweep asks Slurm whether it is over.
bool waiting_on_reboot(const CureProgress& c);

// Whether the reboot asked for has happened: a new boot, or Slurm no longer has it pending (a reboot
// program that restarts slurmd only, or an admin who cancelled it), or the node is back in service.
bool reboot_over(const NodeSighting& node);

// The cure's fault is found again by a sweep (`after_step`: the result is younger than the current
// phase). The caller has ruled out a stopped chain and a cure step's entry still pending.
CureDecision when_fault_found(const CureProgress& c, const NodeSighting& node, bool after_step);

// The chain once its current step failed or did not cure (`why`), at `now`: the next step waits to
// be journalled, or every step was tried (exhausted: the node waits for an admin).
CureProgress after_failed_step(CureProgress c, const std::string& why, WallTime now);

}  // namespace ar::healthd::policy
