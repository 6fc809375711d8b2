// max_drained_share as a table (healthd/policy/share_policy): Slurm's node table in, the answer out.
// actions/slurm_actions.cpp acts on it; responder_test.cpp shows it on a recording Slurm.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "policy/share_policy.hpp"

// A named namespace: unity builds put this file beside others with helpers of their own.
namespace share_policy_test {

using ar::healthd::NodeInfo;
using ar::healthd::policy::burst_around;
using ar::healthd::policy::share_exceeded;

NodeInfo node(std::string name, bool drained = false, std::string reason = "", std::time_t at = 0,
              std::vector<std::string> partitions = {"p1"}) {
  NodeInfo n;
  n.name = std::move(name);
  n.drain = drained;
  n.reason = std::move(reason);
  n.reason_time = at;
  n.partitions = std::move(partitions);
  return n;
}

// n01..n10 in partition p1, the first `drained` of them drained by `reason` at `at`.
std::vector<NodeInfo> partition_of_ten(int drained, const std::string& reason = "admin: bad fan", std::time_t at = 100) {
  std::vector<NodeInfo> table;
  for (int i = 1; i <= 10; ++i) {
    const std::string name = (i < 10 ? "n0" : "n") + std::to_string(i);
    table.push_back(i <= drained ? node(name, true, reason, at) : node(name));
  }
  return table;
}

TEST(SharePolicy, BeforeADrainEveryDrainedNodeCounts) {
  auto table = partition_of_ten(6);
  EXPECT_EQ(share_exceeded(table, table[9], false, 0.7), "");  // 6 + ours = 7 of 10
  table = partition_of_ten(7);
  EXPECT_EQ(share_exceeded(table, table[9], false, 0.7),
            "7 of 10 nodes of partition p1 are drained already (max_drained_share 0.700000)");
}

TEST(SharePolicy, AfterOurDrainOnlyThoseRankedAheadCount) {
  // Seven healthd drains: ours (n10) at 100; the others at 99 (ahead), 100 with a smaller name
  // (ahead), or 101 (behind: they step back, not ours).
  auto table = partition_of_ten(6, "healthd: GPU-XID-79", 101);
  table[9] = node("n10", true, "healthd: GPU-XID-79", 100);
  EXPECT_EQ(share_exceeded(table, table[9], true, 0.7), "");
  for (int i = 0; i < 6; ++i) table[i].reason_time = i < 3 ? 99 : 100;  // n01..n06, all ahead
  table[6] = node("n07", true, "admin: bad fan", 500);                   // an admin's always counts
  EXPECT_EQ(share_exceeded(table, table[9], true, 0.7),
            "7 of 10 nodes of partition p1 were drained before it (max_drained_share 0.700000)");
}

TEST(SharePolicy, OurDrainResumedMeanwhileHasNothingToRank) {
  auto table = partition_of_ten(9);
  EXPECT_EQ(share_exceeded(table, table[9], true, 0.5), "");
}

TEST(SharePolicy, EachPartitionOfTheNodeIsJudgedAndTheOneOverIsNamed) {
  std::vector<NodeInfo> table = {node("a", false, "", 0, {"big", "small"}), node("b", true, "admin: x", 1, {"small"}),
                                 node("c", false, "", 0, {"big"}), node("d", false, "", 0, {"big"})};
  EXPECT_EQ(share_exceeded(table, table[0], false, 0.5),
            "1 of 2 nodes of partition small are drained already (max_drained_share 0.500000)");
  table[1].drain = false;
  EXPECT_EQ(share_exceeded(table, table[0], false, 0.5), "");
}

TEST(SharePolicy, NodesOutsideThePartitionDoNotCount) {
  auto table = partition_of_ten(0);
  for (int i = 0; i < 5; ++i) table.push_back(node("x" + std::to_string(i), true, "admin: elsewhere", 1, {"other"}));
  EXPECT_EQ(share_exceeded(table, table[0], false, 0.1), "");  // 0 + ours = 1 of 10 in p1
}

TEST(SharePolicy, AShareOfOneNeverHoldsADrain) {
  auto table = partition_of_ten(9);
  EXPECT_EQ(share_exceeded(table, table[9], false, 1.0), "");
}

TEST(SharePolicy, ABurstIsTheOtherHealthdDrainsWithinTwoSecondsOfOurs) {
  std::vector<NodeInfo> table = {
      node("self", true, "healthd: GPU-XID-79", 100),
      node("near", true, "healthd: GPU-XID-79", 102),     // within 2 s
      node("before", true, "healthd: MCE", 98),           // within 2 s, earlier
      node("far", true, "healthd: GPU-XID-79", 103),      // 3 s: not of the burst
      node("admin", true, "admin: bad fan", 100),         // not healthd's
      node("stale", false, "healthd: GPU-XID-48", 100),   // in service, its old reason kept (Slurm 24.11)
  };
  EXPECT_EQ(burst_around(table, table[0]), (std::vector<std::string>{"near", "before"}));
}

}  // namespace share_policy_test
