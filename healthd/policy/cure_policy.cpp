#include "policy/cure_policy.hpp"

namespace ar::healthd::policy {

bool chain_stopped(const CureProgress& c) {
  return c.phase == CureProgress::Phase::exhausted || c.phase == CureProgress::Phase::cannot_run;
}

bool waiting_on_reboot(const CureProgress& c) {
  return c.phase == CureProgress::Phase::running && c.current() == Action::reboot;
}

bool reboot_over(const NodeSighting& node) {
  return node.rebooted || (node.slurm_answered && (!node.reboot_pending || !node.drained));
}

CureDecision when_fault_found(const CureProgress& c, const NodeSighting& node, bool after_step) {
  if (chain_stopped(c)) return {};
  // Back in service without a reboot of ours (an admin resumed it): the admin's decision overrides
  // the cure, as it overrides a drain.
  if (node.slurm_answered && !node.drained && !node.reboot_pending && !node.rebooted) return {CureMove::admin_took_over, ""};
  switch (c.phase) {
    case CureProgress::Phase::pending:
      // Found before its first step ran (a restart between the drain and the step).
      return {CureMove::run_step, ""};
    case CureProgress::Phase::running:
      if (c.current() != Action::reboot)
        // Running with no entry journalled (the caller saw none): the daemon stopped between the two.
        return {CureMove::run_step, ""};
      if (after_step && reboot_over(node)) return {CureMove::next_step, "the fault is still there after the reboot"};
      return {};
    case CureProgress::Phase::verifying:
      if (after_step) return {CureMove::next_step, "the fault was found again after it"};
      return {};
    case CureProgress::Phase::failed: return {CureMove::next_step, c.last};
    case CureProgress::Phase::exhausted:
    case CureProgress::Phase::cannot_run: break;
  }
  return {};
}

CureProgress after_failed_step(CureProgress c, const std::string& why, WallTime now) {
  const Action was = c.current();
  ++c.step;
  c.last = to_string(was) + ": " + why;
  c.since = now;
  c.phase = c.at_end() ? CureProgress::Phase::exhausted : CureProgress::Phase::pending;
  return c;
}

}  // namespace ar::healthd::policy
