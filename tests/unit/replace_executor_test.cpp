// A replace entry carried out (actions/replace_executor.cpp), called directly over the executors'
// services: the cure's last step asks for new hardware through the admin's replace hook and holds
// the node for good; with no such hook it holds the node for an admin and says what it needs; a node
// an admin resumed meanwhile is drained again within max_drained_share; a reboot still finishing and
// someone else's drain are waited for and left as they are.
#include <gtest/gtest.h>

#include "executor_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace replace_executor_test {

struct ReplaceFixture : ExecutorFixture {
  JournalEntry entry;
  ReplaceFixture() {
    policy.hooks = {HookConfig{.name = "ticket", .on = {Action::replace}, .command = {"/usr/local/bin/ticket"}}};
    journal.own_drain()->cure = CureProgress{.chain = {Action::reboot, Action::replace}, .step = 1,
                                             .phase = CureProgress::Phase::running};
    entry = journalled(Action::replace);
    entry.reason = std::string(kReason) + " (replacement requested)";
  }
};

TEST(ReplaceExecutor, AsksForNewHardwareAndHoldsTheNodeForGood) {
  ReplaceFixture f;
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_EQ(r->acted, Action::replace);  // the replace hook follows it
  EXPECT_EQ(f.slurm.nodes["n2"].reason, f.entry.reason);
  ASSERT_TRUE(f.journal.own_drain());
  EXPECT_TRUE(f.journal.own_drain()->held);
  EXPECT_EQ(f.journal.own_drain()->cure->phase, CureProgress::Phase::exhausted);
  EXPECT_EQ(f.journal.own_drain()->cure->last, "replacement requested");
}

TEST(ReplaceExecutor, WithNoReplaceHookTheNodeIsHeldForAnAdminSayingWhatItNeeds) {
  ReplaceFixture f;
  f.policy.hooks.clear();
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_FALSE(r->acted);  // nothing was requested: no "replacement requested" notice, no hook
  EXPECT_EQ(f.slurm.nodes["n2"].reason, std::string(ExecutorFixture::kReason) + " (needs replacing: no replace hook; add a [[policy.hook]] on replace)");
  ASSERT_TRUE(f.journal.own_drain());
  EXPECT_TRUE(f.journal.own_drain()->held);
  EXPECT_EQ(f.journal.own_drain()->cure->phase, CureProgress::Phase::cannot_run);
  EXPECT_EQ(f.notices.count(NoticeKind::cure), 1);
}

TEST(ReplaceExecutor, ANodeAnAdminResumedIsDrainedAgainWithinTheShare) {
  ReplaceFixture f;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}, false};
  f.slurm.nodes["n1"] = NodeInfo{"n1", "IDLE", "", {"debug"}, false};
  f.policy.max_drained_share = 0.5;
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_EQ(r->acted, Action::replace);
  EXPECT_TRUE(f.slurm.nodes["n2"].drain);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, f.entry.reason);
  EXPECT_TRUE(f.memory.withheld.empty());
}

TEST(ReplaceExecutor, ADrainPastTheShareWaitsAndRequestsNothing) {
  ReplaceFixture f;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}, false};
  f.slurm.nodes["n1"] = NodeInfo{"n1", "IDLE", "", {"debug"}, false};
  f.slurm.drained_by_an_admin("n1");
  f.policy.max_drained_share = 0.5;
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->finished);  // asked again later
  EXPECT_FALSE(f.slurm.nodes["n2"].drain);
  EXPECT_NE(f.memory.withheld.find("withheld"), std::string::npos) << f.memory.withheld;
  EXPECT_EQ(f.journal.find(f.entry.id)->next_try, f.now + 30s);
  EXPECT_NE(f.journal.own_drain()->cure->phase, CureProgress::Phase::exhausted);
}

TEST(ReplaceExecutor, ARebootStillFinishingIsWaitedFor) {
  ReplaceFixture f;
  f.slurm.nodes["n2"].reboot = true;
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->finished);
  EXPECT_EQ(f.journal.find(f.entry.id)->next_try, f.now + 2s);
  // Ten minutes on, the reboot is no longer waited for.
  r = f.carry(f.entry, f.now + 11min);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
}

TEST(ReplaceExecutor, SomeoneElsesDrainKeepsItsReason) {
  ReplaceFixture f;
  f.slurm.drained_by_an_admin("n2");
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->acted, Action::replace);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "maintenance");
  EXPECT_TRUE(std::none_of(f.slurm.calls.begin(), f.slurm.calls.end(), [](const std::string& c) { return c.starts_with("drain"); }));
}

TEST(ReplaceExecutor, SlurmNotAnsweringIsAnErrorToRetry) {
  ReplaceFixture f;
  f.slurm.answering = false;
  EXPECT_FALSE(f.carry(f.entry, f.now));
}

}  // namespace replace_executor_test
