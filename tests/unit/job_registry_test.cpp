#include <fstream>

#include <gtest/gtest.h>

#include "state/job_registry.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;
namespace proto = ar::proto;

namespace {
const WallClock::time_point t0 = WallClock::time_point(std::chrono::seconds(1'700'000'000));
}

TEST(JobRegistry, TracksStepsAndExits) {
  ar::test::TempDir dir;
  JobRegistry r(dir / "jobs.json");
  r.step_started({5, proto::kBatchStep, "n1", 1000, true, 0}, t0);
  r.step_started({5, 0, "n1", 1000, true, 0}, t0 + 1s);
  r.task_exited({5, 0, "n1", 0, 768}, t0 + 2s);
  r.step_ended({5, 0, "n1"}, t0 + 2s);
  const auto& job = r.jobs().at(5);
  EXPECT_TRUE(job.auto_resume());
  EXPECT_TRUE(job.running());  // the batch step still runs
  const auto& step = job.steps.at({0, 0});
  EXPECT_FALSE(step.running);
  ASSERT_EQ(step.task_exits.size(), 1u);
  EXPECT_EQ(step.task_exits[0].wait_status, 768);
  r.step_ended({5, proto::kBatchStep, "n1"}, t0 + 3s);
  EXPECT_FALSE(r.jobs().at(5).running());
}

TEST(JobRegistry, BatchStepFlagDecidesTheJob) {
  JobRegistry r("/nonexistent");
  r.step_started({1, proto::kBatchStep, "n1", 0, false, 0}, t0);
  r.step_started({1, 0, "n1", 0, true, 0}, t0);
  EXPECT_FALSE(r.jobs().at(1).auto_resume());
  // An salloc/srun job has no batch step: any flagged step makes it auto-resume.
  r.step_started({2, 0, "n1", 0, true, 0}, t0);
  EXPECT_TRUE(r.jobs().at(2).auto_resume());
}

TEST(JobRegistry, RequeuedJobKeepsAttemptsApart) {
  JobRegistry r("/nonexistent");
  r.step_started({9, 0, "n1", 0, true, 0}, t0);
  r.step_ended({9, 0, "n1"}, t0 + 1s);
  r.step_started({9, proto::kBatchStep, "n1", 0, true, 0}, t0);  // its end never reported
  r.step_started({9, 0, "n1", 0, true, 1}, t0 + 5s);
  const auto& job = r.jobs().at(9);
  EXPECT_EQ(job.restart_count, 1u);
  EXPECT_EQ(job.steps.size(), 3u);
  EXPECT_FALSE(job.steps.at({0, proto::kBatchStep}).running);
  EXPECT_TRUE(job.steps.at({1, 0}).running);
  EXPECT_FALSE(job.steps.at({0, 0}).running);
  // A late message of the older attempt does not roll the job back.
  r.step_started({9, 1, "n1", 0, true, 0}, t0 + 6s);
  EXPECT_EQ(r.jobs().at(9).restart_count, 1u);
}

TEST(JobRegistry, ExitWithoutStartIsKept) {
  JobRegistry r("/nonexistent");
  r.task_exited({3, 0, "n1", 2, 9}, t0);
  ASSERT_EQ(r.jobs().count(3), 1u);
  EXPECT_EQ(r.jobs().at(3).steps.at({0, 0}).task_exits.at(0).task_rank, 2u);
}

TEST(JobRegistry, PersistsAndReloads) {
  ar::test::TempDir dir;
  {
    JobRegistry r(dir / "jobs.json");
    r.step_started({5, 0, "n1", 1000, true, 1, 2u}, t0);
    r.task_exited({5, 0, "n1", 1, 9}, t0 + 1s);
    ASSERT_TRUE(r.save());
  }
  JobRegistry again(dir / "jobs.json");
  ASSERT_TRUE(again.load());
  const auto& job = again.jobs().at(5);
  EXPECT_EQ(job.uid, 1000u);
  EXPECT_EQ(job.restart_count, 1u);
  EXPECT_EQ(job.max_resumes, 2u);
  const auto& step = job.steps.at({1, 0});
  EXPECT_TRUE(step.auto_resume);
  EXPECT_TRUE(step.running);
  EXPECT_EQ(step.started_at, t0);
  ASSERT_EQ(step.task_exits.size(), 1u);
  EXPECT_EQ(step.task_exits[0].wait_status, 9);
  EXPECT_FALSE(std::filesystem::exists(dir / "jobs.json.tmp"));
}

TEST(JobRegistry, MissingFileIsEmptyCorruptFileIsAnError) {
  ar::test::TempDir dir;
  JobRegistry missing(dir / "jobs.json");
  EXPECT_TRUE(missing.load());
  EXPECT_TRUE(missing.jobs().empty());

  std::ofstream(dir / "jobs.json") << "{\"version\":1,\"jobs\":[{\"job_id\":";
  JobRegistry corrupt(dir / "jobs.json");
  auto r = corrupt.load();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("jobs.json"), std::string::npos);

  std::ofstream(dir / "jobs.json", std::ios::trunc) << R"({"version":1,"jobs":[{"job_id":"x"}]})";
  r = corrupt.load();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("bad content"), std::string::npos) << r.error();
}

TEST(JobRegistry, PruneDropsOnlyOldFinishedJobs) {
  JobRegistry r("/nonexistent");
  r.step_started({1, 0, "n1", 0, false, 0}, t0);
  r.step_ended({1, 0, "n1"}, t0 + 1s);
  r.step_started({2, 0, "n1", 0, false, 0}, t0);  // still running
  r.step_started({3, 0, "n1", 0, false, 0}, t0);
  r.step_ended({3, 0, "n1"}, t0 + 100s);
  EXPECT_EQ(r.prune(t0 + 120s, 60s), 1u);
  EXPECT_EQ(r.jobs().count(1), 0u);
  EXPECT_EQ(r.jobs().count(2), 1u);
  EXPECT_EQ(r.jobs().count(3), 1u);
}

TEST(WaitStatus, Describes) {
  EXPECT_EQ(describe_wait_status(768), "exit 3");
  EXPECT_EQ(describe_wait_status(0), "exit 0");
  EXPECT_EQ(describe_wait_status(9).rfind("signal 9", 0), 0u);
}

TEST(JobRegistry, KeepsOnlyTheNewestEndedStepsOfAJobAndEveryRunningOne) {
  ar::test::TempDir dir;
  JobRegistry r(dir / "jobs.json");
  const auto now = WallClock::now();
  r.step_started({9, ar::proto::kBatchStep, "n1", 0, true, 0}, now);
  r.step_started({9, 0, "n1", 0, true, 0}, now);  // a long-running step, still running at the end
  for (std::uint32_t s = 1; s <= 200; ++s) {
    r.step_started({9, s, "n1", 0, true, 0}, now);
    r.step_ended({9, s, "n1"}, now);
  }
  const auto& steps = r.jobs().at(9).steps;
  EXPECT_EQ(steps.size(), kMaxEndedStepsPerJob + 2);  // the newest ended ones, step 0 and the batch step
  EXPECT_TRUE(steps.count({0, 0}));
  EXPECT_TRUE(steps.count({0, ar::proto::kBatchStep}));
  EXPECT_TRUE(steps.count({0, 200}));
  EXPECT_FALSE(steps.count({0, 1}));
  EXPECT_TRUE(r.jobs().at(9).auto_resume());
}

TEST(JobRegistry, AHugeStepCountsItsSuccessesAndKeepsItsFirstFailures) {
  ar::test::TempDir dir;
  JobRegistry r(dir / "jobs.json");
  const auto now = WallClock::now();
  r.step_started({9, 0, "n1", 0, true, 0}, now);
  for (std::uint32_t t = 0; t < 3000; ++t) r.task_exited({9, 0, "n1", t, 0}, now);
  for (std::uint32_t t = 3000; t < 5000; ++t) r.task_exited({9, 0, "n1", t, 15}, now);
  const auto& step = r.jobs().at(9).steps.at({0, 0});
  EXPECT_EQ(step.tasks_ok, 3000u);
  EXPECT_EQ(step.task_exits.size(), kMaxTaskExitsPerStep);
  EXPECT_EQ(step.task_exits.front().task_rank, 3000u);
  EXPECT_EQ(step.failures_not_kept, 2000u - kMaxTaskExitsPerStep);
  ASSERT_TRUE(r.save());
  JobRegistry again(dir / "jobs.json");
  ASSERT_TRUE(again.load());
  EXPECT_EQ(again.jobs().at(9).steps.at({0, 0}).tasks_ok, 3000u);
  EXPECT_EQ(again.jobs().at(9).steps.at({0, 0}).failures_not_kept, 2000u - kMaxTaskExitsPerStep);
}

namespace {
// A registry file of one job with one step and one failed task, `field` of it replaced by `value`.
std::string registry_with(const std::string& field, const std::string& value) {
  std::map<std::string, std::string> v = {
      {"version", "1"},       {"job_id", "5"},         {"uid", "1000"},          {"job_restart", "0"},
      {"max_resumes", "2"},   {"step_id", "0"},        {"step_restart", "0"},    {"auto_resume", "true"},
      {"started", "1700000000000"}, {"ended", "1700000001000"}, {"rank", "1"}, {"status", "9"},
      {"at", "1700000000500"}, {"tasks_ok", "3"},      {"last_exit", "1700000000500"}};
  v.at(field) = value;
  return "{\"version\":" + v["version"] + ",\"jobs\":[{\"job_id\":" + v["job_id"] + ",\"uid\":" + v["uid"] +
         ",\"restart_count\":" + v["job_restart"] + ",\"max_resumes\":" + v["max_resumes"] + ",\"steps\":[{\"step_id\":" +
         v["step_id"] + ",\"restart_count\":" + v["step_restart"] + ",\"auto_resume\":" + v["auto_resume"] +
         ",\"running\":false,\"started_at_ms\":" + v["started"] + ",\"ended_at_ms\":" + v["ended"] +
         ",\"task_exits\":[{\"task_rank\":" + v["rank"] + ",\"wait_status\":" + v["status"] + ",\"at_ms\":" + v["at"] +
         "}],\"tasks_ok\":" + v["tasks_ok"] + ",\"last_exit_at_ms\":" + v["last_exit"] + "}]}]}";
}
}  // namespace

TEST(JobRegistry, StateNumbersOutOfRangeAreRefusedNamingFileAndKey) {
  ar::test::TempDir dir;
  const auto file = dir / "jobs.json";
  {
    std::ofstream(file) << registry_with("version", "1");
    JobRegistry ok(file);
    ASSERT_TRUE(ok.load()) << ok.load().error();
    EXPECT_EQ(ok.jobs().at(5).steps.at({0, 0}).task_exits.at(0).at, WallClock::time_point(std::chrono::milliseconds(1700000000500)));
    EXPECT_EQ(ok.jobs().at(5).steps.at({0, 0}).tasks_ok, 3u);
  }
  struct Bad {
    const char* field;
    const char* value;
    const char* key;  // the error must name it
  };
  // Before: -1 wrapped to 4294967295, 1.5 was cut to 1 (or undefined behaviour when larger than
  // the type), a timestamp past 2262 overflowed system_clock.
  const std::vector<Bad> bad = {
      {"job_id", "-1", "jobs[0]: key 'job_id'"},
      {"job_id", "1.5", "key 'job_id'"},
      {"job_id", "4294967296", "key 'job_id'"},
      {"job_id", "1e30", "key 'job_id'"},
      {"job_id", "\"5\"", "key 'job_id'"},
      {"uid", "-1", "key 'uid'"},
      {"job_restart", "-3", "key 'restart_count'"},
      {"max_resumes", "2.5", "key 'max_resumes'"},
      {"max_resumes", "null", "key 'max_resumes'"},
      {"step_id", "-2", "jobs[0]: steps[0]: key 'step_id'"},
      {"step_restart", "1.0", "key 'restart_count'"},
      {"auto_resume", "1", "key 'auto_resume'"},
      {"started", "9223372036854775807", "key 'started_at_ms'"},
      {"started", "-9223372036854775808", "key 'started_at_ms'"},
      {"started", "1.7e12", "key 'started_at_ms'"},
      {"ended", "99999999999999999", "key 'ended_at_ms'"},
      {"rank", "-1", "task_exits[0]: key 'task_rank'"},
      {"status", "4294967296", "key 'wait_status'"},
      {"at", "-1", "key 'at_ms'"},
      {"tasks_ok", "-1", "key 'tasks_ok'"},
      {"last_exit", "1e300", "key 'last_exit_at_ms'"},
      {"version", "1.5", "key 'version'"},
  };
  for (const auto& b : bad) {
    std::ofstream(file, std::ios::trunc) << registry_with(b.field, b.value);
    JobRegistry r(file);
    auto loaded = r.load();
    ASSERT_FALSE(loaded) << b.field << " = " << b.value << " was accepted";
    EXPECT_NE(loaded.error().find(file.string() + ": bad content: "), std::string::npos) << loaded.error();
    EXPECT_NE(loaded.error().find(b.key), std::string::npos) << b.field << " = " << b.value << ": " << loaded.error();
    EXPECT_TRUE(r.jobs().empty());
  }
}
