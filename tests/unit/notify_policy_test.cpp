// notify_only's rule (policy/notify_policy.cpp) as a table: what a sweep's findings tell, given the
// episodes already open.
#include <gtest/gtest.h>

#include "policy/notify_policy.hpp"
#include "text/text.hpp"

namespace ar::healthd::policy {
namespace notify_policy_test {

struct Row {
  const char* what;
  std::vector<std::string> found;  // codes this sweep found calling for notify_only
  std::set<std::string> open;      // episodes open before it
  bool full_pass;
  std::vector<std::string> told;   // codes told now, in order
  std::set<std::string> open_after;
};

std::vector<NotifyFinding> findings(const std::vector<std::string>& codes) {
  std::vector<NotifyFinding> out;
  for (const auto& c : codes) out.push_back({c, "message of " + c});
  return out;
}

TEST(NotifyPolicy, TellsEachEpisodeOnce) {
  const Row rows[] = {
      {"nothing found, nothing open", {}, {}, true, {}, {}},
      {"a new finding is told", {"EFA-COUNT"}, {}, true, {"EFA-COUNT"}, {"EFA-COUNT"}},
      {"found again: not told again", {"EFA-COUNT"}, {"EFA-COUNT"}, true, {}, {"EFA-COUNT"}},
      {"gone on a full pass: the episode is over", {}, {"EFA-COUNT"}, true, {}, {}},
      {"gone on a partial sweep: still open", {}, {"EFA-COUNT"}, false, {}, {"EFA-COUNT"}},
      {"a partial sweep still tells a new one", {"STORAGE-FULL"}, {"EFA-COUNT"}, false, {"STORAGE-FULL"},
       {"EFA-COUNT", "STORAGE-FULL"}},
      {"one code found twice in a sweep: told once", {"EDAC-CE", "EDAC-CE"}, {}, true, {"EDAC-CE"}, {"EDAC-CE"}},
      {"two new codes: both, in the order found", {"B-CODE", "A-CODE"}, {}, true, {"B-CODE", "A-CODE"},
       {"A-CODE", "B-CODE"}},
      {"one still there, one over, one new", {"KEEP", "NEW"}, {"KEEP", "OVER"}, true, {"NEW"}, {"KEEP", "NEW"}},
  };
  for (const auto& row : rows) {
    auto d = decide_notify(findings(row.found), row.open, row.full_pass);
    std::vector<std::string> told;
    for (const auto& f : d.tell) {
      told.push_back(f.code);
      EXPECT_EQ(f.message, "message of " + f.code) << row.what;
    }
    EXPECT_EQ(told, row.told) << row.what;
    EXPECT_EQ(d.open, row.open_after) << row.what;
  }
}

// The rule over sweeps: what calls for notify_only and stands as a warning is told, once per episode,
// as a notify_only entry of this node; its code and message bounded as every fault's are.
TEST(NotifyPolicy, TheSweepRuleJournalsEachNewEpisodeOnceAsAnEntryOfThisNode) {
  auto result = [](std::string code, Remedy action, Status status, std::string message = "counter rose") {
    CheckResult r;
    r.check = "efa";
    r.code = std::move(code);
    r.action = action;
    r.status = status;
    r.message = std::move(message);
    return r;
  };
  const std::string node = "trn-7";
  const WallTime t0{std::chrono::seconds(5000)};
  auto rule = notify_rule();
  const std::vector<CheckResult> first = {result("EFA-COUNT", Remedy::notify_only, Status::warn),
                                          result("KMSG-MCE", Remedy::drain, Status::fault),
                                          result("EDAC-CE", Remedy::warn, Status::warn),
                                          result("OLD", Remedy::notify_only, Status::ok)};
  auto told = rule->judge({first, true, t0, node});
  ASSERT_EQ(told.size(), 1U);
  EXPECT_EQ(told[0].kind, Action::notify_only);
  EXPECT_EQ(told[0].node, node);
  EXPECT_EQ(told[0].code, "EFA-COUNT");
  EXPECT_EQ(told[0].reason, "counter rose");
  EXPECT_EQ(told[0].job_id, 0U);
  EXPECT_EQ(told[0].created, t0);
  EXPECT_EQ(told[0].next_try, t0);
  // Found again: nothing; gone on a full pass, then found again: a new episode, told again.
  EXPECT_TRUE(rule->judge({first, true, t0 + std::chrono::seconds(1), node}).empty());
  EXPECT_TRUE(rule->judge({{}, true, t0 + std::chrono::seconds(2), node}).empty());
  EXPECT_EQ(rule->judge({first, true, t0 + std::chrono::seconds(3), node}).size(), 1U);
  // A second rule remembers nothing of the first's episodes.
  EXPECT_EQ(notify_rule()->judge({first, true, t0, node}).size(), 1U);
  // A code and a message from outside are bounded and escaped (text/text.hpp), never carried raw.
  const std::vector<CheckResult> hostile = {
      result(std::string(500, 'C') + "\n;rm", Remedy::notify_only, Status::warn, "line\nsecond\x1b[31m")};
  auto bounded = notify_rule()->judge({hostile, true, t0, node});
  ASSERT_EQ(bounded.size(), 1U);
  EXPECT_EQ(bounded[0].code, fault_code_text(hostile[0].code));
  EXPECT_EQ(bounded[0].reason, fault_message_text(hostile[0].message));
  EXPECT_LT(bounded[0].code.size(), hostile[0].code.size());
}

}  // namespace notify_policy_test
}  // namespace ar::healthd::policy
