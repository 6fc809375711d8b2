// Step re-run inside the allocation (issue 17): healthd's line in the admin comment, read back by
// the srun of the step, and what the re-run srun starts with.
#include <gtest/gtest.h>

#include <algorithm>

#include "actions/slurm_records.hpp"
#include "auto_resume/job_comment.hpp"
#include "step_rerun.hpp"

using ar::AttemptEnd;
using namespace ar::plugin;

namespace {

bool holds(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

AttemptEnd rerun_line(std::uint32_t attempt, std::uint32_t step, std::uint32_t reruns) {
  return {attempt, "GPU-XID-48", "n2", "XID 48 on 0000:17:00", step, 2, reruns};
}

}  // namespace

TEST(StepRerunComment, RoundTripsWithTheStepItsNodesAndTheCount) {
  auto c = ar::format_attempt_comment(rerun_line(1, 0, 1));
  EXPECT_EQ(c, "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-48 on n2: XID 48 on 0000:17:00");
  auto p = ar::parse_attempt_comment(c);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->attempt, 1u);
  ASSERT_TRUE(p->rerun_step);
  EXPECT_EQ(*p->rerun_step, 0u);
  EXPECT_EQ(p->rerun_nodes, 2u);
  EXPECT_EQ(p->reruns, 1u);
  EXPECT_EQ(p->code, "GPU-XID-48");
  EXPECT_EQ(p->node, "n2");
  EXPECT_EQ(p->message, "XID 48 on 0000:17:00");
}

TEST(StepRerunComment, ARequeueAfterReRunsKeepsTheirCount) {
  auto c = ar::format_attempt_comment({3, "STALL", "n1", "no beat", std::nullopt, 0, 2});
  EXPECT_EQ(c, "auto-resume: attempt 3 ended (re-runs 2): STALL on n1: no beat");
  auto p = ar::parse_attempt_comment(c);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->rerun_step);
  EXPECT_EQ(p->reruns, 2u);
  // A plain line has none.
  auto plain = ar::parse_attempt_comment("auto-resume: attempt 1 ended: GPU-XID-79 on n2: off the bus");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->reruns, 0u);
  EXPECT_FALSE(plain->rerun_step);
}

TEST(StepRerunComment, MalformedCountsAreRefusedNotGuessed) {
  for (const char* bad : {"auto-resume: attempt 1 ended (step x re-run on 2 nodes, re-runs 1): C on n: m",
                          "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs -1): C on n: m",
                          "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes, re-runs 99999999999): C on n: m",
                          "auto-resume: attempt 1 ended (step 0 re-run on 2 nodes: C on n: m",
                          "auto-resume: attempt 1 ended (re-runs ): C on n: m"})
    EXPECT_FALSE(ar::parse_attempt_comment(bad)) << bad;
}

TEST(StepRerunPlan, OnlyTheLineOfThisStepAndThisAttemptAsksForARerun) {
  EXPECT_TRUE(ar::asks_step_rerun(rerun_line(1, 0, 1), 0, 0));
  EXPECT_TRUE(ar::asks_step_rerun(rerun_line(3, 2, 2), 2, 1));  // after one requeue and a second re-run
  EXPECT_FALSE(ar::asks_step_rerun(rerun_line(1, 0, 1), 1, 0)) << "another step's re-run";
  EXPECT_FALSE(ar::asks_step_rerun(rerun_line(1, 0, 1), 0, 1)) << "a line of the attempt before a requeue";
  EXPECT_FALSE(ar::asks_step_rerun(std::nullopt, 0, 0));
  EXPECT_FALSE(ar::asks_step_rerun(AttemptEnd{1, "GPU-XID-48", "n2", "m"}, 0, 0)) << "a requeue's line";
  EXPECT_FALSE(ar::asks_step_rerun(rerun_line(1, 0, 0), 0, 1)) << "no re-run counted";
}

TEST(StepRerunPlan, TheRerunEnvironmentNamesTheNodesLeftAndWhyTheLastAttemptEnded) {
  std::vector<std::string> start{"PATH=/usr/bin", "SLURM_JOB_NODELIST=n[1-3]", "SLURM_JOB_NUM_NODES=3",
                                 "SLURM_NNODES=3", "AUTO_RESUME_LAST_CODE=OLD", "HOME=/root"};
  auto env = rerun_environment(start, rerun_line(1, 0, 1), "n[1,3]", 2);
  EXPECT_TRUE(holds(env, "SLURM_JOB_NODELIST=n[1,3]"));
  EXPECT_TRUE(holds(env, "SLURM_JOB_NUM_NODES=2"));
  EXPECT_TRUE(holds(env, "SLURM_NNODES=2"));
  EXPECT_FALSE(holds(env, "SLURM_NODELIST=n[1,3]")) << "a variable srun did not start with is not added";
  EXPECT_TRUE(holds(env, "AUTO_RESUME_STEP_RERUNS=1"));
  EXPECT_TRUE(holds(env, "AUTO_RESUME_LAST_CODE=GPU-XID-48"));
  EXPECT_FALSE(holds(env, "AUTO_RESUME_LAST_CODE=OLD"));
  EXPECT_TRUE(holds(env, "AUTO_RESUME_LAST_NODE=n2"));
  EXPECT_TRUE(holds(env, "AUTO_RESUME_LAST_REASON=GPU-XID-48 on n2: XID 48 on 0000:17:00"));
  EXPECT_TRUE(holds(env, "PATH=/usr/bin"));
  EXPECT_TRUE(holds(env, "HOME=/root"));
  EXPECT_EQ(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.starts_with("SLURM_JOB_NODELIST="); }), 1);
}

TEST(StepRerunPlan, CommandLineAndCounts) {
  const char bytes[] = "srun\0--auto-resume=1\0-N2\0\0python";
  const std::string raw(bytes, sizeof bytes);  // the last one NUL-terminated, as the kernel writes it
  EXPECT_EQ(split_cmdline(raw), (std::vector<std::string>{"srun", "--auto-resume=1", "-N2", "", "python"}));
  EXPECT_TRUE(split_cmdline("").empty());
  EXPECT_EQ(parse_count("12"), 12u);
  for (const char* bad : {"", "-1", "1x", " 1", "4294967296"}) EXPECT_FALSE(parse_count(bad)) << bad;
  EXPECT_FALSE(parse_count(nullptr));
}

TEST(StepRerunPlan, ASlurmHostListIsExpandedNodeByNode) {
  EXPECT_EQ(ar::healthd::expand_hostlist("n[1-3],gpu07"), (std::vector<std::string>{"n1", "n2", "n3", "gpu07"}));
  EXPECT_EQ(ar::healthd::expand_hostlist("n[1,3]"), (std::vector<std::string>{"n1", "n3"}));
  EXPECT_TRUE(ar::healthd::expand_hostlist("").empty());
}
