// A reset_gpu entry carried out (actions/reset_executor.cpp), called directly over the executors'
// services: the GPUs a fault is on are reset only on a node healthd still holds and once its jobs
// left, on a thread of their own that is polled; a reset that worked asks the checks to forget the
// fault and the node is judged again; a failed or blocked one hands the chain on; no reset tool
// holds the node for an admin, saying what it needs.
#include <gtest/gtest.h>

#include "executor_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace reset_executor_test {

struct ResetFixture : ExecutorFixture {
  std::vector<std::vector<std::string>> reset_asked;  // the GPUs of each reset started
  GpuResetOutcome outcome{GpuResetOutcome::Kind::reset, "GPU 0000:3b:00.0 reset"};
  std::vector<std::string> forgotten;  // codes the checks were asked to forget
  JournalEntry entry;

  ResetFixture() {
    auto& cure = *journal.own_drain()->cure;
    cure.chain = {Action::reset_gpu, Action::reboot};
    cure.phase = CureProgress::Phase::running;
    cure.since = now;
    cure.gpus = {"0000:3b:00.0"};
    resets.reset = [this](const CureConfig&, const std::vector<std::string>& gpus, const std::string&) {
      reset_asked.push_back(gpus);
      return outcome;
    };
    resets.cured = [this](const std::string& code) { forgotten.push_back(code); };
    entry = journalled(Action::reset_gpu);
  }
  const CureProgress& cure() { return *journal.own_drain()->cure; }
  std::expected<Carried, std::string> carry_until_done(WallTime at) {
    return ExecutorFixture::carry_until_done(entry, at);
  }
};

TEST(ResetExecutor, AResetThatWorkedHasTheNodeJudgedAgainAndTheFaultForgotten) {
  ResetFixture f;
  auto r = f.carry_until_done(f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->acted, Action::reset_gpu);
  ASSERT_EQ(f.reset_asked.size(), 1u);
  EXPECT_EQ(f.reset_asked[0], (std::vector<std::string>{"0000:3b:00.0"}));
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::verifying);
  EXPECT_EQ(f.cure().last, "GPU 0000:3b:00.0 reset");
  EXPECT_EQ(f.forgotten, (std::vector<std::string>{"GPU-XID-79"}));
}

TEST(ResetExecutor, AFailedResetHandsTheChainOnWithoutActing) {
  ResetFixture f;
  f.outcome = {GpuResetOutcome::Kind::failed, "nvidia-smi: exit 3: GPU is lost"};
  auto r = f.carry_until_done(f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_FALSE(r->acted);
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::failed);
  EXPECT_EQ(f.cure().last, "nvidia-smi: exit 3: GPU is lost");
  EXPECT_TRUE(f.forgotten.empty());
}

TEST(ResetExecutor, ABlockedResetWaitsThenGivesUpAfterResetWait) {
  ResetFixture f;
  f.outcome = {GpuResetOutcome::Kind::blocked, "GPU 0000:3b:00.0 is used by pid 4242"};
  // Polled until the reset's answer is taken: the entry waits (asked again later), it is not finished.
  for (int i = 0; i < 5000 && f.cure().last != f.outcome.message; ++i) {
    auto r = f.carry(f.entry, f.now);
    ASSERT_TRUE(r) << r.error();
    EXPECT_FALSE(r->finished);
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(f.cure().last, "GPU 0000:3b:00.0 is used by pid 4242");
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::running);
  EXPECT_FALSE(f.resets.runs.running(f.entry.id));
  auto later = f.carry_until_done(f.now + f.policy.cure.reset_wait + 1s);
  ASSERT_TRUE(later) << later.error();
  EXPECT_TRUE(later->finished);
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::failed);
  EXPECT_EQ(f.reset_asked.size(), 2u);
}

TEST(ResetExecutor, ItWaitsForTheNodesJobsThenCountsAsFailed) {
  ResetFixture f;
  f.jobs_here = 1;
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->finished);
  EXPECT_EQ(f.cure().last, "waiting for the node's jobs to leave (1 running)");
  auto late = f.carry(f.entry, f.now + f.policy.cure.reset_wait + 1s);
  ASSERT_TRUE(late) << late.error();
  EXPECT_TRUE(late->finished);
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::failed);
  EXPECT_TRUE(f.reset_asked.empty());
}

TEST(ResetExecutor, NoResetToolHoldsTheNodeSayingWhatItNeeds) {
  ResetFixture f;
  f.outcome = {GpuResetOutcome::Kind::cannot_run, "nvidia-smi is not installed"};
  auto r = f.carry_until_done(f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::cannot_run);
  EXPECT_TRUE(f.journal.own_drain()->held);
  EXPECT_NE(f.slurm.nodes["n2"].reason.find("(needs"), std::string::npos) << f.slurm.nodes["n2"].reason;
  EXPECT_EQ(f.notices.count(NoticeKind::cure), 1);
}

TEST(ResetExecutor, ANodeNoLongerHealthdsIsNotReset) {
  ResetFixture f;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE+DRAIN", "admin: DIMM", {"debug"}, true};
  auto r = f.carry(f.entry, f.now);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->finished);
  EXPECT_FALSE(f.journal.own_drain());
  EXPECT_TRUE(f.reset_asked.empty());
}

}  // namespace reset_executor_test
