// The registry of executors (actions/executors.cpp) against the journal's kinds of entry.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "actions/slurm_actions.hpp"
#include "checks/check.hpp"

namespace ar::healthd {
namespace executors_test {

TEST(Executors, EveryKindOfJournalEntryHasExactlyOneExecutor) {
  for (Action kind : kEntryKinds) {
    const auto& table = SlurmActions::executors();
    const auto n = std::count_if(table.begin(), table.end(), [&](const auto& x) { return x.kind == kind; });
    EXPECT_EQ(n, 1) << to_string(kind);
    const auto* x = SlurmActions::executor_for(kind);
    ASSERT_NE(x, nullptr) << to_string(kind);
    EXPECT_NE(x->function, nullptr) << to_string(kind);  // a way to carry it out
  }
}

TEST(Executors, EveryActionHasOneNameThatReadsBack) {
  std::set<std::string_view> names;
  for (auto a = static_cast<int>(Action::none); a <= static_cast<int>(Action::deep_check); ++a) {
    const auto action = static_cast<Action>(a);
    const auto named = std::count_if(std::begin(kActionNames), std::end(kActionNames),
                                     [&](const auto& row) { return row.first == action; });
    EXPECT_EQ(named, 1) << a;
    EXPECT_EQ(parse_action(to_string(action)), action) << to_string(action);
  }
  for (const auto& [action, name] : kActionNames) EXPECT_TRUE(names.insert(name).second) << name;
  EXPECT_FALSE(parse_action("explode"));
}

TEST(Executors, EveryRemedyHasOneNameThatReadsBack) {
  std::set<std::string_view> names;
  for (auto r = static_cast<int>(Remedy::none); r <= static_cast<int>(Remedy::reboot); ++r) {
    const auto remedy = static_cast<Remedy>(r);
    EXPECT_EQ(parse_remedy(to_string(remedy)), remedy) << to_string(remedy);
  }
  for (const auto& [remedy, name] : kRemedyNames) EXPECT_TRUE(names.insert(name).second) << name;
  EXPECT_FALSE(parse_remedy("requeue"));  // a verb of the journal is never what a fault calls for
}

// Which fault is the worse is severity()'s answer, rising in the order kXidRemedies lists them.
TEST(Executors, SeverityRisesAlongWhatAFaultMayCallFor) {
  for (std::size_t i = 1; i < std::size(kXidRemedies); ++i)
    EXPECT_LT(severity(kXidRemedies[i - 1]), severity(kXidRemedies[i])) << to_string(kXidRemedies[i]);
}

TEST(Executors, OnlyANoticeIsCarriedOutWhileSlurmIsAway) {
  // Everything else looks at Slurm's state first (idempotent on replay): it waits for slurmctld.
  for (const auto& x : SlurmActions::executors())
    EXPECT_EQ(x.needs_slurm, x.kind != Action::notify_only) << to_string(x.kind);
}

TEST(Executors, NoExecutorForWhatIsNeverAnEntry) {
  // What a fault calls for is decided on (engine/), never carried out as an entry of its own; a
  // journal written by hand that holds one is dropped (SlurmActions::carry_out).
  std::set<Action> entries(std::begin(kEntryKinds), std::end(kEntryKinds));
  for (const auto& x : SlurmActions::executors()) EXPECT_TRUE(entries.contains(x.kind)) << to_string(x.kind);
  for (Action a : {Action::none, Action::reboot})
    EXPECT_EQ(SlurmActions::executor_for(a), nullptr) << to_string(a);
}

TEST(Executors, SignalsGoFirstInAPassThenDrainsThenTheRest) {
  const int signal = SlurmActions::executor_for(Action::signal)->order;
  const int drain = SlurmActions::executor_for(Action::drain)->order;
  EXPECT_LT(signal, drain);
  for (Action kind : kEntryKinds) {
    if (kind == Action::signal || kind == Action::drain) continue;
    EXPECT_GT(SlurmActions::executor_for(kind)->order, drain) << to_string(kind);
  }
}

TEST(Executors, ASweepRuleJournalsOnlyItsOwnRowsKind) {
  // A sweep in which every action a fault may call for is found, on each severity: each rule
  // answers entries of its own kind only, for this node, due now.
  std::vector<CheckResult> results;
  for (const auto& [remedy, name] : kRemedyNames)
    for (Status status : {Status::warn, Status::fault}) {
      CheckResult r;
      r.check = "c";
      r.status = status;
      r.action = remedy;
      r.code = "CODE-" + std::string(name);
      r.message = "found";
      results.push_back(r);
    }
  const std::string node = "n1";
  const WallTime now{std::chrono::seconds(1000)};
  std::size_t rules = 0;
  for (const auto& x : SlurmActions::executors()) {
    if (x.sweep_rule == nullptr) continue;
    ++rules;
    auto rule = x.sweep_rule();
    auto entries = rule->judge({results, true, now, node});
    EXPECT_FALSE(entries.empty()) << to_string(x.kind);
    for (const auto& e : entries) {
      EXPECT_EQ(e.kind, x.kind);
      EXPECT_EQ(e.node, node);
      EXPECT_EQ(e.next_try, now);
    }
  }
  EXPECT_GE(rules, 1U);  // notify_only's
  EXPECT_NE(SlurmActions::executor_for(Action::notify_only)->sweep_rule, nullptr);
}

}  // namespace executors_test
}  // namespace ar::healthd
