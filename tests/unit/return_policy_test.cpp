// When healthd returns a node it drained (policy/return_policy.cpp), as a table: the healthy sweep's
// facts into whether the pass counts, the passes after it, and what is journalled.
#include <gtest/gtest.h>

#include "policy/return_policy.hpp"

namespace ar::healthd::policy {
namespace return_policy_test {

// A node healthd drained, not held, a full sweep well spaced from the last, its jobs gone elsewhere:
// the second healthy pass of three. Each row changes what it names.
HealthyPass second_pass() {
  return HealthyPass{.own_drain = true,
                     .held = false,
                     .full_pass = true,
                     .spaced = true,
                     .cure_under_way = false,
                     .passes_before = 1,
                     .recovery_passes = 3,
                     .deep_checked = false,
                     .deep_check_first = false,
                     .jobs_moved = true,
                     .return_pending = false};
}

struct Row {
  const char* what;
  HealthyPass pass;
  bool counted;
  std::uint32_t passes;
  std::optional<Action> journal;
};

HealthyPass with(HealthyPass p, auto change) {
  change(p);
  return p;
}

TEST(ReturnPolicy, WhichHealthyPassesCountAndWhenTheNodeReturns) {
  const Row rows[] = {
      {"the second of three: counted, nothing yet", second_pass(), true, 2, std::nullopt},
      {"the third: the node returns, the count starts again", with(second_pass(), [](auto& p) { p.passes_before = 2; }), true, 0,
       Action::resume},
      {"not healthd's drain: nothing to return", with(second_pass(), [](auto& p) { p.own_drain = false; }), false, 1, std::nullopt},
      {"held for an admin: never returned by healthd", with(second_pass(), [](auto& p) { p.held = true; }), false, 1, std::nullopt},
      {"a poll sweep does not count", with(second_pass(), [](auto& p) { p.full_pass = false; }), false, 1, std::nullopt},
      {"a sweep of a burst does not count", with(second_pass(), [](auto& p) { p.spaced = false; }), false, 1, std::nullopt},
      {"a cure step under way is not a healthy node", with(second_pass(), [](auto& p) { p.cure_under_way = true; }), false, 1,
       std::nullopt},
      {"enough passes, but a requeued job still on its way: it waits, counted",
       with(second_pass(), [](auto& p) { p.passes_before = 2; p.jobs_moved = false; }), true, 3, std::nullopt},
      {"enough passes with a deep check set: the deep check first",
       with(second_pass(), [](auto& p) { p.passes_before = 2; p.deep_check_first = true; }), true, 0, Action::deep_check},
      {"the deep check passed: the next healthy pass returns it",
       with(second_pass(), [](auto& p) { p.passes_before = 0; p.deep_check_first = true; p.deep_checked = true; }), true, 0,
       Action::resume},
      {"a return journalled already: not twice, the count starts again",
       with(second_pass(), [](auto& p) { p.passes_before = 2; p.return_pending = true; }), true, 0, std::nullopt},
      {"one pass is enough where recovery_passes is 1",
       with(second_pass(), [](auto& p) { p.passes_before = 0; p.recovery_passes = 1; }), true, 0, Action::resume},
  };
  for (const auto& row : rows) {
    const auto d = when_healthy(row.pass);
    EXPECT_EQ(d.counted, row.counted) << row.what;
    EXPECT_EQ(d.passes, row.passes) << row.what;
    EXPECT_EQ(d.journal, row.journal) << row.what;
  }
}

}  // namespace return_policy_test
}  // namespace ar::healthd::policy
