// The follow-up of requeued jobs (actions/requeue_follow_up.cpp), over the executors' services: a job
// seen running again gets its timeline line, its notice naming its owner, and its raised priority set
// back; a released job still held for its begin time is nudged, at most three times; a job that
// ended or never ran again stops being followed.
#include <gtest/gtest.h>

#include "actions/requeue_follow_up.hpp"
#include "executor_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace requeue_follow_up_test {

struct FollowFixture : ExecutorFixture {
  FollowFixture() {
    JobInfo job;
    job.job_id = 7;
    job.state = "PENDING";
    job.reason = "BeginTime";
    job.restart_count = 1;
    job.user_id = 1234;
    slurm.jobs[7] = job;
  }
  void runs_on(const std::string& nodes, WallTime since) {
    slurm.jobs[7].state = "RUNNING";
    slurm.jobs[7].reason = "None";
    slurm.jobs[7].node_list = nodes;
    slurm.jobs[7].start_time = since;
  }
};

TEST(RequeueFollowUp, AJobRunningAgainIsToldWithItsOwnerAndItsPrioritySetBack) {
  FollowFixture f;
  f.follow_up.follow(7, 1, f.now, true);
  EXPECT_TRUE(f.follow_up.following());
  EXPECT_EQ(f.follow_up.next_due(), f.now);
  f.follow_up.look(f.services(), f.now);  // still pending
  EXPECT_TRUE(f.follow_up.following(7));
  EXPECT_EQ(f.follow_up.next_due(), f.now + 1s);
  f.runs_on("n3", f.now + 2s);
  f.follow_up.look(f.services(), f.now + 3s);
  EXPECT_FALSE(f.follow_up.following());
  ASSERT_EQ(f.notices.count(NoticeKind::resumed), 1);
  const Notice* n = f.notices.first(NoticeKind::resumed);
  EXPECT_EQ(n->uid, 1234u);
  EXPECT_EQ(n->job_id, 7u);
  EXPECT_EQ(n->message, "running again on n3, 2.0 s after the requeue");
  EXPECT_EQ(f.slurm.count("priority 7 reset"), 1);
  const auto events = f.timeline.events(7);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "running again");
  EXPECT_EQ(events.back().at, f.now + 2s);  // Slurm's start time, not the look's
  // Its owner is forgotten once it is neither followed nor has an entry pending.
  EXPECT_FALSE(f.owners.contains(7));
}

TEST(RequeueFollowUp, AReleasedJobStillHeldForItsBeginTimeIsNudgedAtMostThreeTimes) {
  FollowFixture f;
  f.slurm.release_starts_job = false;
  const std::time_t begin = std::chrono::system_clock::to_time_t(f.now) + 1;
  f.follow_up.nudge(7, 1, begin);
  const auto first = std::chrono::system_clock::from_time_t(begin) + 100ms;
  EXPECT_EQ(f.follow_up.next_due(), first);
  f.follow_up.look(f.services(), first - 1ms);
  EXPECT_EQ(f.slurm.count("release 7"), 0);  // not before its time
  for (int i = 0; i < 5; ++i) f.follow_up.look(f.services(), first + std::chrono::seconds(i));
  EXPECT_EQ(f.slurm.count("release 7"), 3);
  EXPECT_EQ(f.slurm.begins[7], begin);
  EXPECT_FALSE(f.follow_up.next_due());
}

TEST(RequeueFollowUp, ANudgeStopsOnceSlurmNoLongerHoldsTheJobForItsBeginTime) {
  FollowFixture f;
  const std::time_t begin = std::chrono::system_clock::to_time_t(f.now) + 1;
  f.follow_up.nudge(7, 1, begin);
  f.slurm.jobs[7].reason = "Priority";  // judged eligible: the queue does the rest
  f.follow_up.look(f.services(), f.now + 5s);
  EXPECT_EQ(f.slurm.count("release 7"), 0);
  EXPECT_FALSE(f.follow_up.next_due());
}

TEST(RequeueFollowUp, AJobThatEndedOrNeverRanAgainIsNoLongerFollowed) {
  FollowFixture f;
  f.follow_up.follow(7, 1, f.now);
  f.slurm.jobs[7].state = "CANCELLED";
  f.follow_up.look(f.services(), f.now);
  EXPECT_FALSE(f.follow_up.following());
  EXPECT_EQ(f.notices.count(NoticeKind::resumed), 0);

  FollowFixture g;
  g.follow_up.follow(7, 1, g.now);
  g.follow_up.look(g.services(), g.now + 5min);
  EXPECT_TRUE(g.follow_up.following());
  g.follow_up.look(g.services(), g.now + 11min);
  EXPECT_FALSE(g.follow_up.following());
  EXPECT_EQ(g.notices.count(NoticeKind::resumed), 0);
}

}  // namespace requeue_follow_up_test
