// notify_only (vocabulary/action.hpp): a fault whose action keeps the node in service, but that the
// admins are to be told of. Told once per episode: a code found again in the next sweeps is not told
// again; once a full pass (every check ran) no longer finds it, its episode is over, and found again
// it is told again. Calls nothing: `notify_rule` is its sweep rule (policy/sweep_rule.hpp), named in
// notify_only's row of actions/executors.cpp, whose entries the responder journals and
// actions/notify_executor.cpp carries out; tests/unit/notify_policy_test.cpp is the table.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "policy/sweep_rule.hpp"

namespace ar::healthd::policy {

// A check's result calling for notify_only, bounded already (text/text.hpp).
struct NotifyFinding {
  std::string code;
  std::string message;
};

struct NotifyDecision {
  std::vector<NotifyFinding> tell;  // new episodes, one each, in the order found
  std::set<std::string> open;       // the codes whose episode is open after this sweep
};

// `found`: this sweep's findings calling for notify_only; `open`: the episodes open before it;
// `full_pass`: every check ran in this sweep, so a code it did not find is over.
NotifyDecision decide_notify(const std::vector<NotifyFinding>& found, const std::set<std::string>& open, bool full_pass);

// decide_notify over each sweep: the findings are the results calling for notify_only (status warn),
// their code and message bounded; each new episode is a notify_only entry, the message its reason.
std::unique_ptr<SweepRule> notify_rule();

}  // namespace ar::healthd::policy
