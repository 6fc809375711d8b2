// The walk of a cure chain, step by step, over the executors' services (actions/executor.hpp): which
// chain a fault gets is policy/cure_plan.hpp's, what the chain does next policy/cure_policy.hpp's;
// here each move is asked for and journalled. The chain and how far it got live in healthd's own
// drain (state/journal.hpp CureProgress), saved with the journal. Plain functions: the state they
// walk is the journal's, so nothing here remembers anything between calls.
#pragma once

#include <string>

#include "actions/executor.hpp"

namespace ar::healthd {

// After an entry finished: the cure's first step once its drain is carried out, or the next one after
// a step that failed.
void continue_cure(const ExecutorServices& services, WallTime now);
// The responder found fault `code` standing at `at` (a sweep's result): a step carried out before
// `at` did not cure it, so the chain goes on to its next step (or an admin took the node back).
void cure_fault_seen(const ExecutorServices& services, const std::string& code, WallTime at, WallTime now);
// A healthy sweep: a reboot asked for that has happened is over (the node is judged on its passes).
void cure_healthy_seen(const ExecutorServices& services, WallTime now);
// A cure step is under way (a reset running, a reboot asked for): healthy sweeps meanwhile do not
// count towards returning the node.
bool cure_under_way(const Journal& journal);

}  // namespace ar::healthd
