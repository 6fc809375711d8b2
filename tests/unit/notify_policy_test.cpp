// notify_only's rule (policy/notify_policy.cpp) as a table: what a sweep's findings tell, given the
// episodes already open.
#include <gtest/gtest.h>

#include "policy/notify_policy.hpp"

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

}  // namespace notify_policy_test
}  // namespace ar::healthd::policy
