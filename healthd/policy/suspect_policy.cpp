#include "policy/suspect_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace ar::healthd::policy {
namespace {

std::string names(const std::vector<EvidenceLine>& lines) {
  std::string s;
  for (const auto& l : lines) s += (s.empty() ? "" : ",") + l.node;
  return s;
}

}  // namespace

std::size_t most_suspects(std::size_t job_nodes, double max_share) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(max_share * static_cast<double>(job_nodes))));
}

SuspectVerdict judge_suspects(const SuspectFacts& f) {
  SuspectVerdict v;
  for (const auto& e : f.evidence)
    if (has(f.job_nodes, e.node) && std::none_of(v.suspects.begin(), v.suspects.end(),
                                                 [&](const EvidenceLine& s) { return s.node == e.node; }))
      v.suspects.push_back(e);
  const std::size_t nodes = f.job_nodes.size();
  if (v.suspects.empty()) {
    v.why = "no node's evidence points anywhere: no suspect";
    return v;
  }
  const auto most = most_suspects(nodes, f.max_share);
  if (v.suspects.size() >= nodes || v.suspects.size() > most) {
    v.why = std::to_string(v.suspects.size()) + " of the job's " + std::to_string(nodes) +
            " nodes show the same (" + names(v.suspects) + "): the job stopped together; no node is kept off it";
    v.suspects.clear();
    return v;
  }
  for (const auto& s : v.suspects)
    if (has(f.required, s.node)) {
      v.why = "suspect " + names(v.suspects) + " not kept off the job: it asks for " + s.node + " by name (--nodelist)";
      return v;
    }
  // The nodes left to run the job on, once the suspects are out.
  std::size_t fit = 0;
  for (const auto& n : f.node_table) {
    const bool in_partition = std::find(n.partitions.begin(), n.partitions.end(), f.partition) != n.partitions.end();
    const bool suspect = std::any_of(v.suspects.begin(), v.suspects.end(), [&](const EvidenceLine& s) { return s.node == n.name; });
    if (in_partition && !n.drain && !n.down && !suspect && !has(f.excluded, n.name)) ++fit;
  }
  if (fit < nodes) {
    v.why = "suspect " + names(v.suspects) + " not kept off the job: partition " + f.partition + " would have " +
            std::to_string(fit) + " node(s) in service for a job of " + std::to_string(nodes) + " (reported only)";
    return v;
  }
  v.exclude = f.excluded;
  for (const auto& s : v.suspects)
    if (!has(v.exclude, s.node)) v.exclude.push_back(s.node);
  v.why = "suspect " + names(v.suspects) + " kept off the next attempt";
  return v;
}

LemonVerdict judge_lemon(const std::vector<Suspicion>& suspicions, const PolicyConfig& policy, WallTime now) {
  LemonVerdict v;
  std::set<std::uint32_t> users;
  for (const auto& s : suspicions) {
    if (now - s.at > policy.lemon_window) continue;
    if (policy.lemon_distinct_users && !users.insert(s.uid).second) continue;
    ++v.counted;
    v.jobs += (v.jobs.empty() ? "" : ", ") + std::to_string(s.job_id);
  }
  v.drain = policy.lemon_suspicions > 0 && v.counted >= policy.lemon_suspicions;
  const auto days = std::chrono::duration_cast<std::chrono::hours>(policy.lemon_window).count() / 24.0;
  char window[32];
  std::snprintf(window, sizeof window, "%g", days);
  v.why = "suspect of " + std::to_string(v.counted) + " stall(s) within " + window + " day(s)" +
          (policy.lemon_distinct_users ? " in jobs of as many users" : "");
  return v;
}

}  // namespace ar::healthd::policy
