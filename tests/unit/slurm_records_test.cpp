// Slurm's records to healthd's facts (issue 11): every fact from a typed field, so free text in a
// reason or a comment can forge none of them.
#include <gtest/gtest.h>

#include "actions/slurm_api_client.hpp"
#include "actions/slurm_records.hpp"
#include "auto_resume/job_comment.hpp"

using namespace ar::healthd;

namespace {

node_info_t node_record(const char* name, std::uint32_t state, const char* reason, const char* partitions) {
  node_info_t n{};
  n.name = const_cast<char*>(name);
  n.node_state = state;
  n.reason = const_cast<char*>(reason);
  n.partitions = const_cast<char*>(partitions);
  return n;
}

}  // namespace

TEST(SlurmRecords, AReasonHoldingStateWordsIsOnlyTheReason) {
  auto n = to_node_info(node_record("n2", NODE_STATE_MIXED | NODE_STATE_DRAIN, "bad disk State=IDLE see ticket", "debug,gpu"));
  EXPECT_TRUE(n.drained_or_draining());
  EXPECT_FALSE(n.reboot_pending());
  EXPECT_EQ(n.state, "MIXED+DRAIN");
  EXPECT_EQ(n.reason, "bad disk State=IDLE see ticket");
  EXPECT_EQ(n.partitions, (std::vector<std::string>{"debug", "gpu"}));

  auto forged = to_node_info(node_record("n3", NODE_STATE_IDLE, "Reason=forged State=RESUME+DRAIN", nullptr));
  EXPECT_FALSE(forged.drained_or_draining());
  EXPECT_EQ(forged.reason, "Reason=forged State=RESUME+DRAIN");
  EXPECT_TRUE(forged.partitions.empty());
}

TEST(SlurmRecords, RebootFlagsAreRead) {
  const auto requested = to_node_info(node_record("n1", NODE_STATE_IDLE | NODE_STATE_DRAIN | NODE_STATE_REBOOT_REQUESTED, "", ""));
  EXPECT_TRUE(requested.reboot_pending());
  EXPECT_FALSE(requested.reboot_issued);  // can still be called off (max_drained_share)
  const auto issued = to_node_info(node_record("n1", NODE_STATE_DOWN | NODE_STATE_REBOOT_ISSUED, nullptr, ""));
  EXPECT_TRUE(issued.reboot_pending());
  EXPECT_TRUE(issued.reboot_issued);
}

TEST(SlurmRecords, AJobCommentHoldingJobFieldsIsOnlyTheComment) {
  slurm_job_info_t j{};
  j.job_id = 42;
  j.job_state = JOB_RUNNING;
  j.restart_cnt = 0;
  j.comment = const_cast<char*>("train run JobState=PENDING Restarts=9 NodeList=n9");
  j.nodes = const_cast<char*>("n[1-2]");
  j.requeue = 1;
  auto info = to_job_info(j);
  EXPECT_EQ(info.state, "RUNNING");
  EXPECT_EQ(info.restart_count, 0u);
  EXPECT_EQ(info.node_list, "n[1-2]");
  EXPECT_EQ(info.comment, "train run JobState=PENDING Restarts=9 NodeList=n9");
  EXPECT_TRUE(info.requeue);
  EXPECT_TRUE(info.admin_comment.empty());
}

TEST(SlurmRecords, JobStateFlagsNameTheStateAsScontrolDoes) {
  slurm_job_info_t j{};
  j.job_state = JOB_PENDING | JOB_COMPLETING;  // requeued, its last attempt still ending
  EXPECT_EQ(to_job_info(j).state, "COMPLETING");
  EXPECT_TRUE(to_job_info(j).pending);
  j.job_state = JOB_COMPLETE | JOB_COMPLETING;  // a run that ended
  EXPECT_EQ(to_job_info(j).state, "COMPLETING");
  EXPECT_FALSE(to_job_info(j).pending);
  j.job_state = JOB_PENDING | JOB_REQUEUE;
  EXPECT_EQ(to_job_info(j).state, "REQUEUED");
  j.job_state = JOB_PENDING;
  j.state_reason = WAIT_TIME;
  EXPECT_EQ(to_job_info(j).state, "PENDING");
  EXPECT_EQ(to_job_info(j).reason, "BeginTime");
  j.job_state = 200;  // a state this build does not know
  EXPECT_EQ(to_job_info(j).state, "UNKNOWN(200)");
  j.requeue = 0;
  EXPECT_FALSE(to_job_info(j).requeue);
}

TEST(SlurmRecords, ErrorNumbersBecomeTheKindsTheResponderActsOn) {
  EXPECT_EQ(slurm_error("load job 1", ESLURM_INVALID_JOB_ID).kind, SlurmError::Kind::gone);
  EXPECT_EQ(slurm_error("load node x", ESLURM_INVALID_NODE_NAME).kind, SlurmError::Kind::gone);
  // Slurm 24.11+ refuses an admin comment on a job that has ended: retrying it would never end
  // (seen on the 24.11 cluster: "update job 5: Job has already finished" every 30 s).
  EXPECT_EQ(slurm_error("update job 1", ESLURM_JOB_FINISHED).kind, SlurmError::Kind::gone);
  EXPECT_EQ(slurm_error("requeue job 1", ESLURM_DISABLED).kind, SlurmError::Kind::refused);
  EXPECT_EQ(slurm_error("drain", SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR).kind, SlurmError::Kind::not_answering);
  EXPECT_EQ(slurm_error("drain", SLURM_COMMUNICATIONS_RECEIVE_ERROR).kind, SlurmError::Kind::not_answering);
  EXPECT_EQ(slurm_error("drain", ETIMEDOUT).kind, SlurmError::Kind::not_answering);
  EXPECT_EQ(slurm_error("requeue job 1", ESLURM_JOB_PENDING).kind, SlurmError::Kind::other);
  auto e = slurm_error("requeue job 1", ESLURM_DISABLED);
  EXPECT_EQ(e.code, ESLURM_DISABLED);
  EXPECT_NE(e.message.find("requeue job 1: "), std::string::npos);
  EXPECT_NE(e.message.find("disabled"), std::string::npos) << e.message;
}

TEST(AdminComment, OnlyTheAutoResumeLineIsReplaced) {
  EXPECT_EQ(ar::merge_admin_comment("", "auto-resume: attempt 1 ended: X on n1: m"), "auto-resume: attempt 1 ended: X on n1: m");
  EXPECT_EQ(ar::merge_admin_comment("ticket 1\nauto-resume: attempt 1 ended: X on n1: m\nother tool: {}",
                                    "auto-resume: attempt 2 ended: Y on n2: a\nb"),
            "ticket 1\nother tool: {}\nauto-resume: attempt 2 ended: Y on n2: a b");
  const std::string merged = "ticket 1\nauto-resume: attempt 2 ended: Y on n2: a b\nmore";
  auto last = ar::parse_attempt_comment(ar::auto_resume_line(merged));
  ASSERT_TRUE(last);
  EXPECT_EQ(last->attempt, 2u);
  EXPECT_EQ(last->code, "Y");
  EXPECT_EQ(last->node, "n2");
  EXPECT_EQ(last->message, "a b");
  EXPECT_EQ(ar::auto_resume_line("ticket: auto-resume: attempt 1 ended: X on n1"), "");
}

// libslurm's config loader ends the process (fatal()) when it finds no slurm.conf: the client looks
// first, and a node without one gets "not answering" (retried), never a dead daemon.
TEST(SlurmApiClient, NoSlurmConfIsNotAnsweringNotACrash) {
  const char* old = std::getenv("SLURM_CONF");
  const std::string saved = old ? old : "";
  setenv("SLURM_CONF", "/nonexistent/slurm.conf", 1);
  {
    SlurmApiClient client("/usr/bin/scontrol", std::chrono::seconds(2));
    auto n = client.node("n1");
    ASSERT_FALSE(n);
    EXPECT_EQ(n.error().kind, SlurmError::Kind::not_answering);
    EXPECT_NE(n.error().message.find("load node n1: no slurm.conf"), std::string::npos) << n.error().message;
    auto j = client.job(7);
    ASSERT_FALSE(j);
    EXPECT_EQ(j.error().kind, SlurmError::Kind::not_answering);
  }
  if (old) setenv("SLURM_CONF", saved.c_str(), 1);
  else unsetenv("SLURM_CONF");
}
