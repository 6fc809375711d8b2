// The plugin's SPANK hooks (plugin/spank_plugin.cpp and its context modules), called in Slurm's order
// against a fake SPANK (tests/fakes/fake_spank.hpp), with a real healthd server on the other end of
// the socket: what the plugin reads of Slurm, what it tells healthd, what it sets in the task's
// environment and what it logs, for slurmstepd (remote), srun (local) and sbatch (allocator).
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

extern "C" {
#include <slurm/spank.h>
}

#include "auto_resume/job_comment.hpp"
#include "auto_resume/protocol.hpp"
#include "daemon_fixture.hpp"
#include "fake_spank.hpp"
#include "options.hpp"

namespace {

using ar::test::fake_spank;
using ar::test::FakeSpank;
using ar::test::RunningDaemon;
namespace proto = ar::proto;

constexpr std::uint32_t kJob = 4242;
constexpr std::uint32_t kUid = 1000;

spank_t handle() { return ar::test::fake_spank_handle(); }

int init(const std::vector<std::string>& words) {
  std::vector<char*> av;
  for (const auto& w : words) av.push_back(const_cast<char*>(w.c_str()));
  return slurm_spank_init(handle(), static_cast<int>(av.size()), av.data());
}

std::vector<std::string> plugstack(const RunningDaemon& d) { return {"socket=" + d.socket_path, "timeout_ms=2000"}; }

ar::plugin::JobFacts record(std::uint32_t restart_count, std::string admin_comment = "") {
  return {restart_count, "n1", "n[1-2]", 2, std::move(admin_comment), true, true};
}

// slurmstepd of job kJob's step `step` on node `node_id` (remote context), its task 0 exiting with
// `wait_status`; slurmctld answers the job's record when `job` is set.
FakeSpank slurmstepd(std::uint32_t step, std::optional<ar::plugin::JobFacts> job, std::uint32_t node_id = 0) {
  FakeSpank f;
  f.context = S_CTX_REMOTE;
  f.items = {{S_JOB_ID, kJob}, {S_JOB_STEPID, step},   {S_JOB_UID, kUid},         {S_JOB_NODEID, node_id},
             {S_TASK_ID, 0},   {S_TASK_GLOBAL_ID, 0}, {S_TASK_EXIT_STATUS, 0}, {S_SLURM_RESTART_COUNT, 0}};
  f.env = {{"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_STEP_NODELIST", "n[1-2]"}};
  if (job) f.jobs[kJob] = *job;
  return f;
}

// What healthd's registry holds of kJob, read on the server's own thread.
std::optional<ar::healthd::JobRecord> recorded(RunningDaemon& d) {
  std::promise<std::optional<ar::healthd::JobRecord>> p;
  asio::post(d.io, [&] {
    auto it = d.registry.jobs().find(kJob);
    p.set_value(it == d.registry.jobs().end() ? std::nullopt : std::optional(it->second));
  });
  return p.get_future().get();
}

// The remote hooks of one step, in slurmstepd's order, each answering 0 (a hook never fails a job).
void run_remote_step(const std::vector<std::string>& words, const char* auto_resume = "1") {
  ASSERT_EQ(init(words), 0);
  if (auto_resume) {
    ASSERT_EQ(fake_spank().give_option(ar::plugin::kOptionName, auto_resume, true), 0);
  }
  ASSERT_EQ(slurm_spank_init_post_opt(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_task_init(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_task_exit(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_exit(handle(), 0, nullptr), 0);
}

std::string errors() {
  std::string all;
  for (const auto& e : fake_spank().errors) all += e + "\n";
  return all;
}

}  // namespace

TEST(PluginHooks, ABatchStepTellsHealthdItsWholeLifeAndItsTaskTheFirstAttempt) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, record(0)));
  fake_spank().items[S_TASK_EXIT_STATUS] = 3 << 8;

  ASSERT_EQ(init(plugstack(d)), 0);
  EXPECT_EQ(fake_spank().options.size(), 6u);  // every option, so Slurm forwards them all
  ASSERT_EQ(fake_spank().give_option(ar::plugin::kOptionName, "1", true), 0);
  ASSERT_EQ(slurm_spank_init_post_opt(handle(), 0, nullptr), 0);
  auto job = recorded(d);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->uid, kUid);
  EXPECT_EQ(job->restart_count, 0u);
  EXPECT_TRUE(job->auto_resume());
  EXPECT_TRUE(job->batch_here());

  ASSERT_EQ(slurm_spank_task_init(handle(), 0, nullptr), 0);
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME"), "1");
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_ATTEMPT"), "1");
  EXPECT_FALSE(fake_spank().env_value("AUTO_RESUME_LAST_CODE"));
  EXPECT_FALSE(fake_spank().env_value("AUTO_RESUME_REQUEUE"));  // the job may be requeued

  ASSERT_EQ(slurm_spank_task_exit(handle(), 0, nullptr), 0);
  job = recorded(d);
  const auto& step = job->steps.at({0, proto::kBatchStep});
  ASSERT_EQ(step.task_exits.size(), 1u);
  EXPECT_EQ(step.task_exits[0].wait_status, 3 << 8);
  EXPECT_TRUE(step.running);

  ASSERT_EQ(slurm_spank_exit(handle(), 0, nullptr), 0);
  EXPECT_FALSE(recorded(d)->steps.at({0, proto::kBatchStep}).running);
  EXPECT_EQ(fake_spank().job_reads, 1);  // one read of slurmctld per step, inherited by the task
  EXPECT_EQ(errors(), "");
}

// A step of an auto-resume job with --auto-resume-heartbeat-dir=/fsx/beats, up to its task's exec.
static void start_per_rank_task(const RunningDaemon& d) {
  ASSERT_EQ(init(plugstack(d)), 0);
  ASSERT_EQ(fake_spank().give_option(ar::plugin::kOptionName, "1", true), 0);
  ASSERT_EQ(fake_spank().give_option(ar::plugin::kHeartbeatDirOptionName, "/fsx/beats", true), 0);
  ASSERT_EQ(slurm_spank_init_post_opt(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_task_post_fork(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_task_init(handle(), 0, nullptr), 0);
}

// --auto-resume-heartbeat-dir (issue 34): each task of an srun step gets its own file by its global
// rank, and slurmstepd tells healthd which process runs it; the batch script gets neither.
TEST(PluginHooks, PerRankHeartbeatsGiveEachTaskItsFileAndTellHealthdItsProcess) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(0, record(0)));
  fake_spank().items[S_TASK_GLOBAL_ID] = 5;
  fake_spank().items[S_TASK_PID] = 4242;
  start_per_rank_task(d);
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_HEARTBEAT_FILE"), "/fsx/beats/rank-5");
  auto job = recorded(d);
  ASSERT_TRUE(job);
  ASSERT_TRUE(job->heartbeat);
  EXPECT_TRUE(job->heartbeat->per_rank);
  EXPECT_EQ(job->heartbeat->path, "/fsx/beats");
  EXPECT_EQ(job->running_tasks(), (std::vector<ar::healthd::TaskStartRecord>{{5, 4242}}));
  ASSERT_EQ(slurm_spank_exit(handle(), 0, nullptr), 0);
  EXPECT_EQ(errors(), "");

  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, record(0)));
  fake_spank().items[S_TASK_PID] = 4243;
  start_per_rank_task(d);
  EXPECT_FALSE(fake_spank().env_value("AUTO_RESUME_HEARTBEAT_FILE")) << "the batch script is no rank";
  EXPECT_TRUE(recorded(d)->steps.at({0, proto::kBatchStep}).tasks.empty());
}

TEST(PluginHooks, TheRestartCountComesFromTheJobRecordNeverFromTheJobsEnvironment) {
  RunningDaemon d;
  ar::AttemptEnd last{2, "GPU-XID-79", "n2", "NVRM: Xid 79", std::nullopt, 0, 0};
  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, record(2, ar::format_attempt_comment(last))));
  fake_spank().env["SLURM_RESTART_COUNT"] = "7";  // the user's to set
  fake_spank().items[S_SLURM_RESTART_COUNT] = 7;

  run_remote_step(plugstack(d));
  EXPECT_EQ(recorded(d)->restart_count, 2u);
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_ATTEMPT"), "3");
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_LAST_CODE"), "GPU-XID-79");
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_LAST_NODE"), "n2");
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_LAST_REASON"), "GPU-XID-79 on n2: NVRM: Xid 79");
  EXPECT_EQ(errors(), "");
}

TEST(PluginHooks, AStepWhoseNodeListNamesANodeOutsideTheJobIsNotReported) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(0, record(0)));
  // root's slurmstepd would connect to a socket path of the user's choosing where the template holds %n
  fake_spank().env["SLURM_STEP_NODELIST"] = "x9";
  run_remote_step({"socket=" + (d.dir / "%n.sock").string()});
  EXPECT_FALSE(recorded(d));
  EXPECT_NE(errors().find("names 'x9', which is not a node of job 4242 (n[1-2])"), std::string::npos) << errors();
  EXPECT_NE(errors().find("this step is not reported"), std::string::npos) << errors();
}

TEST(PluginHooks, AnSrunStepTakesItsNodeFromItsPlaceInTheStepsNodeList) {
  RunningDaemon d("n2");
  ar::test::reset_fake_spank(slurmstepd(0, record(0), /*node_id=*/1));
  run_remote_step(plugstack(d));
  auto job = recorded(d);
  ASSERT_TRUE(job);
  EXPECT_TRUE(job->steps.contains({0, 0u}));
  EXPECT_FALSE(job->batch_here());
  EXPECT_EQ(errors(), "");
}

TEST(PluginHooks, TheExternStepIsNeitherReadNorReported) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(proto::kExternStep, record(0)));
  // The extern step has no tasks: slurmstepd calls no task hook for it.
  ASSERT_EQ(init(plugstack(d)), 0);
  ASSERT_EQ(fake_spank().give_option(ar::plugin::kOptionName, "1", true), 0);
  ASSERT_EQ(slurm_spank_init_post_opt(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_exit(handle(), 0, nullptr), 0);
  EXPECT_FALSE(recorded(d));
  EXPECT_EQ(fake_spank().job_reads, 0);
  EXPECT_EQ(errors(), "");
}

TEST(PluginHooks, AStepWhoseIdsSlurmDidNotGiveIsNotReportedAndNeverAsksForJobZero) {
  RunningDaemon d;
  auto f = slurmstepd(0, record(0));
  f.items.erase(S_JOB_ID);
  ar::test::reset_fake_spank(f);
  run_remote_step(plugstack(d));
  EXPECT_FALSE(recorded(d));
  EXPECT_EQ(fake_spank().job_reads, 0);  // before: the task asked slurmctld for job 0
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME"), "1");
  EXPECT_NE(errors().find("cannot read the job or step id; this step is not reported"), std::string::npos) << errors();
}

TEST(PluginHooks, WithoutSlurmctldTheCountIsSlurmsOwnItemAndTheLogSaysSo) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, std::nullopt));
  fake_spank().items[S_SLURM_RESTART_COUNT] = 1;
  run_remote_step(plugstack(d));
  EXPECT_EQ(recorded(d)->restart_count, 1u);
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_ATTEMPT"), "2");
  EXPECT_NE(errors().find("cannot read job 4242 from slurmctld; its restart count is taken as 1"), std::string::npos)
      << errors();
  EXPECT_EQ(fake_spank().job_reads, 2);  // the task asks once more
}

TEST(PluginHooks, TheTaskCorrectsAStartReportedWhileSlurmctldDidNotAnswer) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, std::nullopt));
  ASSERT_EQ(init(plugstack(d)), 0);
  ASSERT_EQ(fake_spank().give_option(ar::plugin::kOptionName, "1", true), 0);
  ASSERT_EQ(slurm_spank_init_post_opt(handle(), 0, nullptr), 0);
  EXPECT_EQ(recorded(d)->restart_count, 0u);
  fake_spank().jobs[kJob] = record(1);  // slurmctld answers again by the time the task starts
  ASSERT_EQ(slurm_spank_task_init(handle(), 0, nullptr), 0);
  EXPECT_EQ(recorded(d)->restart_count, 1u);
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_ATTEMPT"), "2");
}

TEST(PluginHooks, AJobThatCannotBeRequeuedIsToldSoInItsFirstAttempt) {
  RunningDaemon d;
  auto job = record(0);
  job.requeue = false;
  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, job));
  run_remote_step(plugstack(d));
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_REQUEUE"), "0");
}

TEST(PluginHooks, AStepWithoutAutoResumeIsReportedButNotRead) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(0, record(0)));
  run_remote_step(plugstack(d), nullptr);
  auto job = recorded(d);
  ASSERT_TRUE(job);
  EXPECT_FALSE(job->auto_resume());
  EXPECT_EQ(fake_spank().job_reads, 0);
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME"), "0");
}

TEST(PluginHooks, HealthdDownFailsNoHookAndIsLoggedOnce) {
  ar::test::TempDir dir;
  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, record(0)));
  run_remote_step({"socket=" + (dir / "healthd.sock").string()});
  EXPECT_EQ(fake_spank().errors.size(), 1u) << errors();
  EXPECT_EQ(fake_spank().env_value("AUTO_RESUME_ATTEMPT"), "1");  // the task still gets its variables
}

TEST(PluginHooks, ABadPlugstackLineDisablesReportingButKeepsTheOptions) {
  RunningDaemon d;
  ar::test::reset_fake_spank(slurmstepd(proto::kBatchStep, record(0)));
  run_remote_step({"socket=" + d.socket_path, "colour=blue"});
  EXPECT_EQ(fake_spank().options.size(), 6u);  // scripts that pass the options keep working
  EXPECT_FALSE(recorded(d));
  EXPECT_EQ(fake_spank().job_reads, 0);
  EXPECT_NE(errors().find("plugstack.conf: "), std::string::npos) << errors();
  EXPECT_NE(errors().find("the plugin is disabled"), std::string::npos) << errors();
}

TEST(PluginHooks, SbatchRefusesABadOptionValueWithItsReasonAndReadsNothing) {
  FakeSpank f;
  f.context = S_CTX_ALLOCATOR;
  ar::test::reset_fake_spank(f);
  ASSERT_EQ(init({}), 0);
  EXPECT_NE(fake_spank().give_option(ar::plugin::kOptionName, "2", false), 0);
  EXPECT_NE(fake_spank().give_option(ar::plugin::kMaxResumesOptionName, "-1", false), 0);
  EXPECT_EQ(fake_spank().give_option(ar::plugin::kCheckpointOptionName, "/ckpt", false), 0);
  EXPECT_EQ(slurm_spank_init_post_opt(handle(), 0, nullptr), 0);
  EXPECT_EQ(slurm_spank_exit(handle(), 0, nullptr), 0);
  EXPECT_EQ(fake_spank().job_reads, 0);
  ASSERT_EQ(fake_spank().errors.size(), 2u) << errors();
  for (const auto& e : fake_spank().errors) EXPECT_EQ(e.rfind("auto-resume: ", 0), 0u) << e;
}

TEST(PluginHooks, SrunReadsItsJobOnceAtItsEndAndRunsNothingAgainUnasked) {
  // srun inside a batch script (ENVIRONMENT=BATCH as it started) whose job's admin comment asks a
  // re-run of another step: this srun ends as usual.
  ::setenv("ENVIRONMENT", "BATCH", 1);
  FakeSpank f;
  f.context = S_CTX_LOCAL;
  f.items = {{S_JOB_ID, kJob}, {S_JOB_STEPID, 3}};
  ar::AttemptEnd other{1, "GPU-XID-79", "n2", "xid", 5u, 1, 1};
  f.jobs[kJob] = record(0, ar::format_attempt_comment(other));
  ar::test::reset_fake_spank(f);
  ASSERT_EQ(init({}), 0);
  ::unsetenv("ENVIRONMENT");
  ASSERT_EQ(fake_spank().give_option(ar::plugin::kOptionName, "1", false), 0);
  ASSERT_EQ(slurm_spank_local_user_init(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_exit(handle(), 0, nullptr), 0);
  EXPECT_EQ(fake_spank().job_reads, 1);
  EXPECT_EQ(errors(), "");
}

TEST(PluginHooks, SrunOutsideABatchScriptNeverReadsItsJob) {
  ::unsetenv("ENVIRONMENT");
  FakeSpank f;
  f.context = S_CTX_LOCAL;
  f.items = {{S_JOB_ID, kJob}, {S_JOB_STEPID, 0}};
  f.jobs[kJob] = record(0);
  ar::test::reset_fake_spank(f);
  ASSERT_EQ(init({}), 0);
  ASSERT_EQ(fake_spank().give_option(ar::plugin::kOptionName, "1", false), 0);
  ASSERT_EQ(slurm_spank_local_user_init(handle(), 0, nullptr), 0);
  ASSERT_EQ(slurm_spank_exit(handle(), 0, nullptr), 0);
  EXPECT_EQ(fake_spank().job_reads, 0);
}
