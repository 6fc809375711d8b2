// The cure walk (actions/cure_walk.cpp) called directly over the executors' services: a drain carried
// out starts its chain's first step, a step that failed hands over to the next, the fault found again
// after a step carried out moves the chain on, a healthy sweep after the reboot happened has the node
// judged on its passes, and an admin who returned the node ends the cure.
#include <gtest/gtest.h>

#include "actions/cure_walk.hpp"
#include "executor_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace cure_walk_test {

struct WalkFixture : ExecutorFixture {
  WalkFixture() {
    auto& c = cure();
    c.chain = {Action::reset_gpu, Action::reboot, Action::replace};
    c.gpus = {"0000:3b:00.0"};
    c.since = now;
    c.jobs = {7};
  }
  CureProgress& cure() { return *journal.own_drain()->cure; }
  std::vector<Action> pending_kinds() {
    std::vector<Action> kinds;
    for (const auto& e : journal.pending()) kinds.push_back(e.kind);
    return kinds;
  }
};

TEST(CureWalk, TheDrainCarriedOutStartsTheFirstStepOnceAndTheJobsAreTold) {
  WalkFixture f;
  continue_cure(f.services(), f.now);
  EXPECT_EQ(f.pending_kinds(), std::vector<Action>{Action::reset_gpu});
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::running);
  EXPECT_TRUE(cure_under_way(f.journal));
  const auto events = f.timeline.events(7);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "node cure");
  EXPECT_NE(events.back().detail.find("step 1 of 3"), std::string::npos) << events.back().detail;
  // Asked again while the step is journalled: not twice.
  continue_cure(f.services(), f.now);
  EXPECT_EQ(f.pending_kinds().size(), 1u);
}

TEST(CureWalk, AFailedStepHandsOverToTheNextWithANotice) {
  WalkFixture f;
  f.cure().phase = CureProgress::Phase::failed;
  f.cure().last = "nvidia-smi -r failed";
  continue_cure(f.services(), f.now);
  EXPECT_EQ(f.cure().step, 1u);
  // The reboot is a drain that reboots.
  ASSERT_EQ(f.journal.pending().size(), 1u);
  EXPECT_EQ(f.journal.pending().front().kind, Action::drain);
  EXPECT_TRUE(f.journal.pending().front().reboot);
  ASSERT_FALSE(f.notices.seen.empty());
  EXPECT_NE(f.notices.seen.back().message.find("reset_gpu did not cure GPU-XID-79: nvidia-smi -r failed"), std::string::npos);
}

TEST(CureWalk, TheFaultFoundAgainAfterAStepCarriedOutMovesTheChainOn) {
  WalkFixture f;
  f.cure().phase = CureProgress::Phase::verifying;
  f.cure().since = f.now;
  // Found before the step was carried out: says nothing about it.
  cure_fault_seen(f.services(), "GPU-XID-79", f.now - 1s, f.now);
  EXPECT_EQ(f.cure().step, 0u);
  // Another fault is not this cure's.
  cure_fault_seen(f.services(), "GPU-XID-48", f.now + 1s, f.now + 1s);
  EXPECT_EQ(f.cure().step, 0u);
  cure_fault_seen(f.services(), "GPU-XID-79", f.now + 1s, f.now + 1s);
  EXPECT_EQ(f.cure().step, 1u);
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::running);
}

TEST(CureWalk, AnAdminWhoReturnedTheNodeEndsTheCureAndOverridesTheFault) {
  WalkFixture f;
  f.cure().phase = CureProgress::Phase::verifying;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}, false};  // resumed by hand
  cure_fault_seen(f.services(), "GPU-XID-79", f.now + 1s, f.now + 1s);
  EXPECT_FALSE(f.journal.own_drain());
  EXPECT_EQ(f.memory.overridden, "GPU-XID-79");
  EXPECT_TRUE(f.journal.pending().empty());
}

TEST(CureWalk, AHealthySweepAfterTheRebootHappenedHasTheNodeJudgedOnItsPasses) {
  WalkFixture f;
  f.cure().step = 1;  // the reboot
  f.cure().phase = CureProgress::Phase::running;
  f.cure().boot_id = "boot-1";
  f.slurm.nodes["n2"].reboot = true;  // asked of Slurm, not yet done
  // The same boot, and Slurm still shows the reboot pending: it has not happened.
  cure_healthy_seen(f.services(), f.now);
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::running);
  EXPECT_TRUE(cure_under_way(f.journal));
  f.boot_id = "boot-2";
  cure_healthy_seen(f.services(), f.now + 60s);
  EXPECT_EQ(f.cure().phase, CureProgress::Phase::verifying);
  EXPECT_EQ(f.cure().last, "rebooted");
  EXPECT_FALSE(cure_under_way(f.journal));
}

TEST(CureWalk, ReportOnlyStartsNoStep) {
  WalkFixture f;
  f.policy.report_only = true;
  continue_cure(f.services(), f.now);
  cure_fault_seen(f.services(), "GPU-XID-79", f.now + 1s, f.now + 1s);
  EXPECT_TRUE(f.journal.pending().empty());
}

}  // namespace cure_walk_test
