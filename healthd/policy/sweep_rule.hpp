// A policy rule that judges each sweep on its own, for an action of its own: from the sweep's typed
// results into journal entries for this node, keeping what it must remember between sweeps in
// itself (in memory: a restart forgets it). It calls nothing. Each rule is named in its action's row
// of the executors' registry (actions/executors.cpp), next to the executor that carries its entries
// out; the responder asks every listed rule after each sweep, before it judges the node's faults,
// and journals what the rules answer (under report_only it says what they would do instead). A new
// rule of this kind changes neither the responder nor the class that runs the journal.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "state/journal.hpp"

namespace ar::healthd::policy {

struct SweepFacts {
  const std::vector<CheckResult>& results;  // every check's latest result
  bool full_pass;                           // every check ran (or stood) in this sweep
  WallTime now;
  const std::string& node;                  // this node's name in Slurm
};

class SweepRule {
 public:
  virtual ~SweepRule() = default;
  // The entries this sweep calls for, due now (most sweeps: none).
  virtual std::vector<JournalEntry> judge(const SweepFacts& sweep) = 0;
};

// Makes a rule with nothing remembered yet: one per responder.
using SweepRuleMaker = std::unique_ptr<SweepRule> (*)();

}  // namespace ar::healthd::policy
