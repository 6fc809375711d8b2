// A deep_check entry carried out (actions/deep_check_executor.cpp), called directly over the
// executors' services: the admin's long test of a node healthd holds out, only once its jobs left,
// run on a thread of its own and polled, never waited for; its failure keeps the node out, held,
// with the test's first line as the reason; a node back in service is not healthd's to test.
#include <gtest/gtest.h>

#include "executor_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace deep_check_executor_test {

struct DeepCheckFixture : ExecutorFixture {
  JournalEntry entry;
  DeepCheckFixture() {
    policy.cure.deep_check = {"/usr/local/bin/nccl-test", "%n"};
    entry = journalled(Action::deep_check);
  }
  std::expected<Carried, std::string> carry_until_done() { return ExecutorFixture::carry_until_done(entry, now); }
};

TEST(DeepCheckExecutor, APassedTestLetsTheNextHealthySweepReturnTheNode) {
  DeepCheckFixture f;
  auto r = f.carry_until_done();
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->acted, Action::deep_check);
  ASSERT_EQ(f.runs.size(), 1u);
  EXPECT_EQ(f.runs[0], (std::vector<std::string>{"/usr/local/bin/nccl-test", "n2"}));
  EXPECT_NE(std::find(f.envs[0].begin(), f.envs[0].end(), "HEALTHD_ACTION=deep_check"), f.envs[0].end());
  ASSERT_TRUE(f.journal.own_drain());
  EXPECT_TRUE(f.journal.own_drain()->cure->deep_checked);
  EXPECT_FALSE(f.journal.own_drain()->held);
  EXPECT_EQ(f.notices.count(NoticeKind::cure), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: fallen off the bus");
}

TEST(DeepCheckExecutor, AFailedTestHoldsTheNodeWithTheTestsFirstLine) {
  DeepCheckFixture f;
  f.answer = ProcessResult{3, false, false, false, "busbw 12.5 GB/s below 180\nmore\n", ""};
  auto r = f.carry_until_done();
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->acted, Action::deep_check);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: DEEP-CHECK: exit 3: busbw 12.5 GB/s below 180");
  ASSERT_TRUE(f.journal.own_drain());
  EXPECT_TRUE(f.journal.own_drain()->held);
  EXPECT_FALSE(f.journal.own_drain()->cure->deep_checked);
  EXPECT_EQ(f.journal.own_drain()->cure->last, "deep check failed: exit 3: busbw 12.5 GB/s below 180");
}

TEST(DeepCheckExecutor, ARunningTestIsPolledNeverWaitedForAndStartedOnce) {
  DeepCheckFixture f;
  f.release = false;
  for (int i = 0; i < 3; ++i) {
    auto r = f.carry(f.entry, f.now);
    ASSERT_TRUE(r) << r.error();
    EXPECT_FALSE(r->finished);
  }
  EXPECT_TRUE(f.programs.running(f.entry.id));
  EXPECT_GT(f.journal.find(f.entry.id)->next_try, f.now);  // the entry waits, it is not failed
  EXPECT_EQ(f.journal.find(f.entry.id)->attempts, 0u);
  f.release = true;
  auto r = f.carry_until_done();
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_EQ(f.runs.size(), 1u);
}

TEST(DeepCheckExecutor, ItWaitsForTheNodesJobsToLeave) {
  DeepCheckFixture f;
  f.jobs_here = 2;
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->finished);
  EXPECT_TRUE(f.runs.empty());
  EXPECT_FALSE(f.programs.running(f.entry.id));
}

TEST(DeepCheckExecutor, ANodeBackInServiceIsNotHealthdsToTest) {
  DeepCheckFixture f;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}};
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_FALSE(r->acted);
  EXPECT_TRUE(f.runs.empty());
  EXPECT_FALSE(f.journal.own_drain());
}

TEST(DeepCheckExecutor, TurnedOffMeanwhileTheNodeReturnsAsWithoutOne) {
  DeepCheckFixture f;
  f.policy.cure.deep_check.clear();
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_TRUE(f.runs.empty());
  EXPECT_TRUE(f.journal.has_pending(Action::resume, 0, 0));
}

TEST(DeepCheckExecutor, SlurmNotAnsweringIsAnErrorToRetryNotARun) {
  DeepCheckFixture f;
  f.slurm.answering = false;
  auto r = f.carry(f.entry, f.now);
  EXPECT_FALSE(r);
  EXPECT_TRUE(f.runs.empty());
}

}  // namespace deep_check_executor_test
