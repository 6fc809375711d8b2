// The requeue entry carried out against a recording Slurm (actions/requeue_executor.cpp): the hold
// released once the job is pending, the follow-up until it runs again, its priority, the scheduler
// nudged. Whether to requeue at all is requeue_policy_test's table.
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "engine/responder.hpp"
#include "responder_fixture.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

// A named namespace: unity builds put this file beside others with helpers of their own.
namespace requeue_executor_test {

TEST(Responder, TheHoldIsReleasedOnlyOnceTheJobIsPendingWithoutBlockingTheEngine) {
  Fixture f;
  f.slurm.completing_reads = 4;
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("release 7"), 0);  // still COMPLETING: the entry waits, run_due returned
  ASSERT_TRUE(f.responder->next_due());
  EXPECT_LE(*f.responder->next_due() - f.now, 100ms);
  for (int i = 0; i < 10; ++i) f.responder->run_due(f.now += 50ms);
  EXPECT_EQ(f.slurm.count("release 7"), 1);
  EXPECT_EQ(f.slurm.count("release too early 7"), 0);
}

// A job whose node never reports the kill stays COMPLETING: it is looked at every 50 ms for its first
// 100 looks (5 s), then every second, so it cannot keep the engine busy.
TEST(Responder, AJobThatStaysCompletingIsLookedAtEverySecondAfterFiveSeconds) {
  Fixture f;
  f.slurm.completing_reads = 1000000;
  f.sweep(true);  // the requeue, and the release's first look (1 wait)
  for (int look = 2; look <= 99; ++look) {
    ASSERT_TRUE(f.responder->next_due());
    ASSERT_LE(*f.responder->next_due() - f.now, 50ms) << look;
    f.responder->run_due(f.now += 50ms);
  }
  ASSERT_TRUE(f.responder->next_due());
  EXPECT_LE(*f.responder->next_due() - f.now, 50ms);  // the 99th wait: still 50 ms
  f.responder->run_due(f.now += 50ms);
  ASSERT_TRUE(f.responder->next_due());
  EXPECT_EQ(*f.responder->next_due() - f.now, 1000ms);  // the 100th: a second
  EXPECT_EQ(f.slurm.count("release 7"), 0);
}

// The count of waits behind that: by step, reset when the step advances, never saved (a restart
// waits again from its start).
TEST(Journal, AnEntrysWaitsAreCountedInItsStepAndNotSaved) {
  ar::test::TempDir dir;
  const WallTime now{std::chrono::seconds(1000)};
  Journal j(dir / "journal.json");
  ASSERT_TRUE(j.load());
  auto id = j.add(due_entry(Action::requeue, "n2", "GPU-XID-79", now));
  ASSERT_TRUE(id);
  j.wait_until(*id, now + 50ms, "waiting");
  j.wait_until(*id, now + 100ms, "waiting");
  EXPECT_EQ(j.find(*id)->waits, 2u);
  EXPECT_EQ(j.find(*id)->next_try, now + 100ms);
  ASSERT_TRUE(j.advance(*id, RequeueStep::release));
  EXPECT_EQ(j.find(*id)->waits, 0u);
  j.wait_until(*id, now + 150ms, "waiting");
  ASSERT_TRUE(j.save());
  Journal again(dir / "journal.json");
  ASSERT_TRUE(again.load());
  ASSERT_NE(again.find(*id), nullptr);
  EXPECT_EQ(again.find(*id)->waits, 0u);
  EXPECT_EQ(again.find(*id)->step, RequeueStep::release);
}

// Item 15: the timeline said "started and now CANCELLED on , 46.5 s" for a job cancelled while pending.
TEST(Responder, AJobCancelledWhilePendingIsNotSaidToHaveStarted) {
  Fixture f;
  f.slurm.release_starts_job = false;  // a busy cluster: it stays PENDING
  f.sweep(true);
  f.slurm.jobs[7].state = "CANCELLED";
  f.slurm.jobs[7].node_list = "";
  f.responder->follow_requeued(f.now + 1s);
  EXPECT_FALSE(f.timeline.has_event(7, "running again"));
  auto events = f.timeline.events(7);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "ended");
  EXPECT_NE(events.back().detail.find("without being seen running again"), std::string::npos);
}

// Seen at 128 nodes: another node's daemon requeued a 124-node job, whose last attempt took seconds
// to end. Meanwhile slurmctld shows it COMPLETING over PENDING, with the backfill scheduler's
// expected start in its start time: this daemon said "running again" 4 s early, and returned its node,
// which the job then restarted onto.
TEST(Responder, ARequeuedJobStillEndingItsLastAttemptIsNotRunningAgainYet) {
  PolicyConfig p;
  p.recovery_passes = 1;
  Fixture f(p);
  auto& job = f.slurm.jobs[7];
  job.restart_count = 1;  // requeued by another node's healthd
  job.state = "COMPLETING";
  job.pending = true;
  job.start_time = f.now + 5s;
  f.slurm.completing_left[7] = 1000;
  f.sweep(true);
  ASSERT_TRUE(f.timeline.has_event(7, "requeued elsewhere"));
  for (int i = 0; i < 3; ++i) f.sweep(false);  // the node is healthy again meanwhile
  EXPECT_FALSE(f.timeline.has_event(7, "running again"));
  EXPECT_EQ(f.slurm.count("resume n2"), 0);  // not returned before the job runs again
  job.state = "RUNNING";
  job.pending = false;
  job.start_time = f.now;
  for (int i = 0; i < 3; ++i) f.sweep(false);
  EXPECT_TRUE(f.timeline.has_event(7, "running again"));
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(Responder, FollowingARequeuedJobSlowsDownWhileItWaits) {
  Fixture f;
  f.slurm.release_starts_job = false;
  f.sweep(true);  // requeued and released; PENDING from here on
  const int before = f.slurm.call_no;
  for (int s = 0; s < 600; ++s) f.responder->follow_requeued(f.now + std::chrono::seconds(s));  // ten minutes
  const int reads = f.slurm.call_no - before;
  EXPECT_LT(reads, 120);  // was 3.5 a second: about 2,000
  EXPECT_GT(reads, 10);
}

// Item 16 (state files): a journal whose numbers are out of range is refused, naming file and key.
TEST(Journal, OutOfRangeNumbersAreRefusedNotWrapped) {
  for (const char* bad : {R"("job_id": -1)", R"("job_id": 1.5)", R"("job_id": 4294967296)", R"("job_id": "7")"}) {
    ar::test::TempDir dir;
    std::string text = std::string(R"({"version":1,"next_id":5,"requeued":[],"fault_history_ms":[],"pending":[{"id":1,"kind":"requeue","node":"n2",)") +
                       bad + R"(,"restart_count":0,"code":"X","reason":"r","created_ms":1,"attempts":0,"next_try_ms":1,"last_error":""}]})";
    { std::ofstream(dir / "journal.json") << text; }
    Journal j(dir / "journal.json");
    auto r = j.load();
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("journal.json"), std::string::npos);
    EXPECT_NE(r.error().find("job_id"), std::string::npos) << r.error();
  }
  ar::test::TempDir dir;
  { std::ofstream(dir / "journal.json") << R"({"version":1,"next_id":5,"requeued":[],"pending":[],"fault_history_ms":[99999999999999999]})"; }
  Journal j(dir / "journal.json");
  auto r = j.load();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("fault_history_ms"), std::string::npos);
}

TEST(Responder, ARestartDuringAnEpisodeDoesNotMakeANewOne) {
  PolicyConfig p;
  p.flap_max_faults = 2;
  Fixture f(p);
  f.sweep(true);
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}};  // an admin resumed it
  Journal reloaded(f.dir / "journal.json");
  ASSERT_TRUE(reloaded.load());
  Responder again("n2", f.policy, f.slurm, reloaded, f.timeline);
  again.on_sweep({kernel_log_result(true)}, {}, std::nullopt, f.now);
  again.run_due(f.now);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);  // not drained again behind the admin's back
  EXPECT_EQ(reloaded.fault_history().size(), 1u);  // and not one fault more towards flapping
}

// Seen on the cluster with slurmctld down for 10 s: the fault's hold ran out meanwhile, three sweeps
// triggered within 0.7 s counted as three healthy passes, and the node was resumed right after the
// hold release, so the job started again on the node that had failed it.
TEST(Responder, ABurstOfSweepsIsNotRecoveryPassesAndTheNodeWaitsForItsJobsToMove) {
  PolicyConfig p;
  p.recovery_passes = 3;
  Fixture f(p);
  f.slurm.release_starts_job = false;  // the requeued job waits in the queue
  f.sweep(true);
  for (int i = 0; i < 10; ++i) {  // ten healthy sweeps within one second
    f.responder->on_sweep({}, {}, std::nullopt, f.now);
    f.responder->run_due(f.now);
    f.now += 100ms;
  }
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  for (int i = 0; i < 5; ++i) f.sweep(false);  // spaced passes, but job 7 has not started elsewhere
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  f.slurm.jobs[7].state = "RUNNING";
  f.slurm.jobs[7].node_list = "n[1,3]";
  for (int i = 0; i < 2; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

// Issue 11: the user's --comment is theirs; healthd's line goes to the admin comment, beside any
// other line an admin or tool keeps there.
TEST(Responder, WhyTheAttemptEndedGoesToTheAdminCommentAndLeavesTheUsersComment) {
  Fixture f;
  f.slurm.jobs[7].comment = R"({"policy": "mine"} JobState=PENDING Restarts=9)";
  f.slurm.jobs[7].admin_comment = "ticket 4711: watch this job";
  f.sweep(true);
  EXPECT_EQ(f.slurm.jobs[7].comment, R"({"policy": "mine"} JobState=PENDING Restarts=9)");
  EXPECT_EQ(f.slurm.jobs[7].admin_comment,
            "ticket 4711: watch this job\nauto-resume: attempt 1 ended: GPU-XID-79 on n2: fallen off the bus");
  // A second attempt's line replaces the first; the admin's line stays.
  f.slurm.jobs[7].state = "RUNNING";
  f.sweep(false);
  f.sweep(true, {{7, 1, true}});
  EXPECT_EQ(f.slurm.count("requeue 7"), 2);
  EXPECT_EQ(f.slurm.jobs[7].admin_comment,
            "ticket 4711: watch this job\nauto-resume: attempt 2 ended: GPU-XID-79 on n2: fallen off the bus");
}

TEST(Responder, AJobThatCannotBeRequeuedIsToldOnceAndNotRetried) {
  Fixture f;
  f.slurm.jobs[7].requeue = false;  // --no-requeue, or JobRequeue=0 without --requeue
  f.sweep(true);
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_TRUE(f.journal.pending().empty());
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("does not allow requeue"), std::string::npos);
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("--requeue"), std::string::npos);
  EXPECT_TRUE(f.timeline.has_event(7, "not requeued"));
}

TEST(Responder, ARequeuedJobWaitsWithTopPriorityAndGetsSlurmsOwnBackOnceRunning) {
  Fixture f;
  f.slurm.completing_reads = 2;
  f.slurm.release_starts_job = false;
  f.sweep(true);
  for (int i = 0; i < 5 && f.slurm.count("release 7") == 0; ++i) f.sweep(true);
  ASSERT_EQ(f.slurm.count("release 7"), 1);
  EXPECT_EQ(f.slurm.count("priority 7 4294967293"), 1);
  EXPECT_EQ(f.slurm.count("priority 7 reset"), 0);  // still waiting
  // The begin time is slurmctld's second after the requeue, from the job's own submit time.
  EXPECT_EQ(f.slurm.begins[7], std::chrono::system_clock::to_time_t(f.slurm.jobs[7].submit_time) + 1);
  f.slurm.jobs[7].state = "RUNNING";
  f.slurm.jobs[7].start_time = f.now;
  for (int i = 0; i < 3; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("priority 7 reset"), 1);
  EXPECT_TRUE(f.timeline.has_event(7, "running again"));
}

TEST(Responder, RequeuePriorityKeepLeavesThePriorityAlone) {
  PolicyConfig p;
  p.requeue_priority = RequeuePriority::keep;
  Fixture f(p);
  f.sweep(true);
  f.sweep(false);
  EXPECT_EQ(f.slurm.count("release 7"), 1);
  for (const auto& c : f.slurm.calls) EXPECT_EQ(c.rfind("priority", 0), std::string::npos) << c;
}

TEST(Responder, AReleasedJobStillHeldAfterItsBeginSecondIsScheduledAgainAFewTimesAtMost) {
  Fixture f;
  f.slurm.release_starts_job = false;  // the scheduler pass came before the begin second
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("release 7"), 1);
  const auto begin = f.slurm.begins[7];
  for (int i = 0; i < 10; ++i) f.sweep(false);
  // Updates with the same begin time (each queues a scheduler pass) while Slurm still says
  // BeginTime: three, then no more.
  EXPECT_EQ(f.slurm.count("release 7"), 4);
  EXPECT_EQ(f.slurm.begins[7], begin);
}

TEST(Responder, AReleasedJobSlurmJudgedEligibleIsLeftToTheQueue) {
  Fixture f;
  f.slurm.release_starts_job = false;
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("release 7"), 1);
  f.slurm.jobs[7].reason = "Resources";  // eligible, waiting for nodes: the queue's business now
  for (int i = 0; i < 5; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("release 7"), 1);
}

}  // namespace requeue_executor_test
