// Which nodes a stalled job's next attempt is kept off: the decision of the node that acts on the
// stall (its batch script's), from the evidence each node of the job wrote about itself in the job's
// admin comment (engine/rank_evidence.hpp, auto_resume/job_comment.hpp EvidenceLine), read from
// Slurm a moment ago. Calls nothing: actions/requeue_executor.cpp gathers the facts and carries the
// answer out (the requeued job's ExcNodeList, set in the same update that lifts its requeue hold).
//
// Safe by construction:
//   - only nodes of the job count, one line each;
//   - no line: nothing points anywhere, a plain STALL requeue;
//   - more nodes than `max_share` of the job's (at least one), or all of them: the job stopped
//     together (a deadlock in the code, a shared filesystem): no node is named;
//   - a node the job asks for by name (--nodelist) is named, never kept off (it could not run again);
//   - the job must still fit: the nodes of its partition in service (not drained, not down) and not
//     excluded already must number at least its own node count once the suspects are out, else
//     they are reported and not excluded.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "auto_resume/job_comment.hpp"
#include "config/config.hpp"
#include "state/journal.hpp"
#include "vocabulary/slurm_facts.hpp"

namespace ar::healthd::policy {

struct SuspectFacts {
  std::vector<EvidenceLine> evidence;     // the job's lines for the attempt that stalled
  std::vector<std::string> job_nodes;     // the nodes of that attempt
  std::vector<std::string> excluded;      // its ExcNodeList already (the user's --exclude, earlier suspects)
  std::vector<std::string> required;      // its ReqNodeList (--nodelist): a node it asks for by name
  std::string partition;
  std::vector<NodeInfo> node_table;       // every node, for the nodes left to run the job on
  double max_share = 0.25;
};

struct SuspectVerdict {
  std::vector<EvidenceLine> suspects;     // the nodes the evidence points to (named, excluded or not)
  std::vector<std::string> exclude;       // the job's whole ExcNodeList from now on; empty: unchanged
  std::string why;                        // for the timeline and the admin comment: what was decided and why
};

SuspectVerdict judge_suspects(const SuspectFacts& facts);

// The most nodes of a job of `job_nodes` that may be named (`max_share` of them, at least one). Once
// more evidence lines than that are in the comment, the decision is "stopped together" whatever the
// others write: they need not write.
std::size_t most_suspects(std::size_t job_nodes, double max_share);

// The lemon rule, on this node's suspicions (the newest last): drained for the deep check when
// [policy] lemon_suspicions of them fall within lemon_window of `now`, from the jobs of as many
// different users (lemon_distinct_users). `why` says what counted.
struct LemonVerdict {
  bool drain = false;
  std::size_t counted = 0;  // the suspicions in the window that count
  std::string why;          // without job ids: healthctl status shows it to every user
  std::string jobs;         // "12, 13": the jobs of the suspicions counted, for the log and the drain reason
};
LemonVerdict judge_lemon(const std::vector<Suspicion>& suspicions, const PolicyConfig& policy, WallTime now);

}  // namespace ar::healthd::policy
