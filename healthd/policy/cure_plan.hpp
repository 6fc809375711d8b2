// Which cure a fault gets: the chain of steps (reset_gpu, reboot, replace) healthd walks after the
// drain, one step at a time, while a step does not cure the fault (the same fault found again after
// it). The admin's [[cure.chain]] for the fault's code wins, then one for its XID; else the
// catalogue's default (NVIDIA's health-validation catalogue chains actions per XID the same way):
//
//   a GPU reset cures it (XID 48, 64, 74, 94, 95, 119, 120, 140, 61/62; a pending row remap or page
//     retirement; the driver's own "reset" verdict)      reset_gpu -> reboot -> replace
//   only a reboot cures it (XID 79, a lost GPU, ...)      reboot -> replace
//   new hardware is the cure (a row remap that failed, an uncorrectable Neuron error, a node held
//     for flapping)                                       replace
//   anything else                                         drain only (as before chains: the node
//                                                         comes back once the fault clears)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "config/cure_config.hpp"
#include "vocabulary/action.hpp"
#include "vocabulary/remedy.hpp"

namespace ar::healthd::policy {

// The chain for `fault` (status fault). `held`: the node is quarantined for flapping.
std::vector<Action> cure_chain(const CureConfig& config, const CheckResult& fault, bool held);

// The catalogue's default for a code and the action its check recommends, without the admin's
// chains: for the check reference and `healthctl explain`.
std::vector<Action> default_cure_chain(const std::string& code, Remedy remedy);

// The XID of a code "GPU-XID-<n>", if it is one: for the check reference (docs/checks.md). No
// decision reads it: a fault's XID is CheckResult::xid.
std::optional<unsigned> xid_of_code(const std::string& code);

}  // namespace ar::healthd::policy
