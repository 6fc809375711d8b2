// Step re-run inside the allocation, as healthd decides it (healthd/actions/step_rerun.cpp): a fault
// under the one auto-resume step of a batch job on this node takes the node out of the job and kills
// the step for its srun to run it again, when the nodes left can carry it; else the job is requeued.
#include <gtest/gtest.h>

#include "responder_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;

namespace {

// Job 7 on n1-n3, its batch script on n1, its auto-resume step 0 on n1 and n2: n3 is the spare.
void three_node_job(Fixture& f) {
  auto& j = f.slurm.jobs[7];
  j.node_list = "n[1-3]";
  j.nodes = {"n1", "n2", "n3"};
  j.batch = true;
  j.batch_host = "n1";
  j.partition = "debug";
  f.slurm.steps[7][0] = StepInfo{0, {"n1", "n2"}};
}

const std::vector<LocalJob> kStepHere{{7, 0, true, std::nullopt, std::nullopt, false, {0}}};

std::vector<std::string> without_reads(const std::vector<std::string>& calls) {
  std::vector<std::string> out;
  for (const auto& c : calls)
    if (c.starts_with("comment") || c.starts_with("shrink") || c.starts_with("kill step") || c.starts_with("requeue"))
      out.push_back(c);
  return out;
}

}  // namespace

TEST(StepRerun, AFaultUnderTheStepTakesTheNodeOutCommentFirstThenShrinkThenKill) {
  Fixture f;
  three_node_job(f);
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(without_reads(f.slurm.calls), (std::vector<std::string>{"comment 7", "shrink 7 to n1,n3", "kill step 7.0"}));
  EXPECT_EQ(f.slurm.jobs[7].admin_comment,
            "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-79 on n2: fallen off the bus");
  EXPECT_EQ(f.slurm.jobs[7].restart_count, 0u);
}

TEST(StepRerun, TheBatchScriptsNodeCannotLeaveSoTheJobIsRequeued) {
  Fixture f;
  three_node_job(f);
  f.slurm.jobs[7].batch_host = "n2";
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("kill step 7.0"), 0);
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("attempt 1 ended: GPU-XID-79 on n2"), std::string::npos);
}

TEST(StepRerun, AHeterogeneousJobIsRequeuedAsBefore) {
  Fixture f;
  three_node_job(f);
  f.slurm.jobs[7].heterogeneous = true;
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("kill step 7.0"), 0);
}

TEST(StepRerun, TooFewNodesLeftForTheStepRequeuesTheJob) {
  Fixture f;
  three_node_job(f);
  f.slurm.steps[7][0].nodes = {"n1", "n2", "n3"};  // no spare
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  for (const auto& c : f.slurm.calls) EXPECT_FALSE(c.starts_with("shrink")) << c;
}

TEST(StepRerun, ANodeTheSlurmAlreadyDrainedIsNotCountedAsLeft) {
  Fixture f;
  three_node_job(f);
  f.slurm.nodes["n3"].drain = true;  // the spare is going too: nothing left for 2 nodes
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

TEST(StepRerun, ASecondFaultyNodeOfTheSameStepOnlyLeavesTheJob) {
  Fixture f;
  three_node_job(f);
  f.slurm.jobs[7].node_list = "n[1-4]";
  f.slurm.jobs[7].nodes = {"n1", "n2", "n3", "n4"};
  // n3's healthd re-ran the step first for the same failure; n2 (this node) is still in the job.
  f.slurm.jobs[7].admin_comment = "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-79 on n3: x";
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_EQ(f.slurm.count("comment 7"), 0) << "the first node's line stays: one re-run for one failure";
  EXPECT_EQ(f.slurm.count("shrink 7 to n1,n3,n4"), 1);
  EXPECT_EQ(f.slurm.jobs[7].admin_comment, "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-79 on n3: x");
}

TEST(StepRerun, ReRunsCountAgainstTheResumeCap) {
  PolicyConfig p;
  p.max_resumes = 2;
  Fixture f(p);
  three_node_job(f);
  // Two re-runs already (the last for step 3): a fault under step 0 now finds the cap reached.
  f.slurm.jobs[7].admin_comment = "auto-resume: attempt 2 ended (step 3 re-run on 2 nodes, re-runs 2): GPU-XID-79 on n4: x";
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_EQ(f.slurm.count("kill step 7.0"), 0);
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("the cap of 2 resumes is reached"), std::string::npos);
}

TEST(StepRerun, TurnedOffByTheAdminTheJobIsRequeuedAsBefore) {
  PolicyConfig p;
  p.step_rerun = false;
  Fixture f(p);
  three_node_job(f);
  f.sweep(true, kStepHere);
  f.sweep(true, kStepHere);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("kill step 7.0"), 0);
}

TEST(StepRerun, AJobRequeuedAfterReRunsCountsThemInItsAttempt) {
  Fixture f;
  three_node_job(f);
  f.slurm.jobs[7].batch_host = "n2";  // not re-run: requeued
  f.slurm.jobs[7].admin_comment = "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-79 on n3: x";
  f.slurm.steps[7][1] = StepInfo{1, {"n1", "n2"}};
  const std::vector<LocalJob> step1{{7, 0, true, std::nullopt, std::nullopt, true, {1}}};
  f.sweep(true, step1);
  f.sweep(true, step1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.jobs[7].admin_comment, "auto-resume: attempt 2 ended (re-runs 1): GPU-XID-79 on n2: fallen off the bus");
}

// healthd killed before or after any Slurm call of a re-run: the restarted daemon (journal read back)
// finishes it once: the line written once, the node out of the job, the step killed, no requeue.
TEST(StepRerunUnderKills, EveryKillPointEndsInOneRerunAndNoRequeue) {
  int points = 0;
  {
    Fixture f;
    three_node_job(f);
    f.sweep(true, kStepHere);
    f.sweep(true, kStepHere);
    points = f.slurm.call_no;
  }
  ASSERT_GT(points, 3);
  for (int kill_at = 1; kill_at <= points; ++kill_at)
    for (bool after : {false, true}) {
      SCOPED_TRACE("killed " + std::string(after ? "after" : "before") + " Slurm call " + std::to_string(kill_at));
      Fixture f;
      three_node_job(f);
      f.slurm.kill_at = kill_at;
      f.slurm.kill_after = after;
      try {
        f.sweep(true, kStepHere);
        f.sweep(true, kStepHere);
      } catch (const Killed&) {
      }
      f.slurm.kill_at = 0;
      Journal journal(f.dir / "journal.json");
      ASSERT_TRUE(journal.load());
      Responder restarted("n2", f.policy, f.slurm, journal, f.timeline);
      for (int i = 0; i < 10; ++i) {
        restarted.on_sweep({kernel_log_result(true)}, kStepHere, std::nullopt, f.now);
        restarted.run_due(f.now);
        f.now += 1s;
      }
      EXPECT_EQ(f.slurm.count("requeue 7"), 0);
      EXPECT_EQ(f.slurm.count("comment 7"), 1);
      EXPECT_EQ(f.slurm.jobs[7].nodes, (std::vector<std::string>{"n1", "n3"}));
      EXPECT_TRUE(f.slurm.steps[7].empty()) << "the step was killed";
      EXPECT_EQ(f.slurm.jobs[7].admin_comment,
                "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-79 on n2: fallen off the bus");
    }
}
