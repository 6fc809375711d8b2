// What the executors tell (notices: vocabulary/notice.hpp) and an admin's drain, resume and clear
// through healthctl, carried out as journal entries marked admin.
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
namespace admin_actions_test {

// ---- notices (vocabulary/notice.hpp) and admin actions through healthctl --------------------------

namespace {


}  // namespace

TEST(Notices, AnIncidentRaisesOneOfEachWithTheJobItsOwnerAndTheCode) {
  PolicyConfig p;
  p.recovery_passes = 1;
  Fixture f(p);
  RecordedNotices notices;
  f.responder->set_notices(&notices, 3);
  f.slurm.jobs[7].user_id = 1234;
  f.sweep(true);
  f.sweep(true);
  ASSERT_EQ(notices.count(NoticeKind::incident), 1);
  ASSERT_EQ(notices.count(NoticeKind::drain), 1);
  ASSERT_EQ(notices.count(NoticeKind::requeue), 1);
  const auto* requeue = notices.first(NoticeKind::requeue);
  EXPECT_EQ(requeue->node, "n2");
  EXPECT_EQ(requeue->job_id, 7u);
  EXPECT_EQ(requeue->code, "GPU-XID-79");
  ASSERT_TRUE(requeue->uid.has_value());
  EXPECT_EQ(*requeue->uid, 1234u);
  EXPECT_EQ(notices.first(NoticeKind::drain)->message, "healthd: GPU-XID-79: fallen off the bus");
  EXPECT_EQ(notices.first(NoticeKind::drain)->action, "drain");
  // The released job runs again (the fake starts it at the release), then the node returns.
  EXPECT_EQ(notices.count(NoticeKind::resumed), 1);
  EXPECT_EQ(notices.first(NoticeKind::resumed)->job_id, 7u);
  for (int i = 0; i < 5; ++i) f.sweep(false, {});
  EXPECT_EQ(notices.count(NoticeKind::node_returned), 1);
  EXPECT_EQ(notices.count(NoticeKind::drain), 1);
}

TEST(Notices, AnActionFailingIsSaidOnceAfterItsTriesAndNotBefore) {
  Fixture f;
  RecordedNotices notices;
  f.responder->set_notices(&notices, 3);
  f.slurm.drain_fails = true;
  f.sweep(true, {});
  for (int i = 0; i < 10; ++i) {
    f.now += 120s;  // past every backoff
    f.responder->run_due(f.now);
    if (i == 0) {
      EXPECT_EQ(notices.count(NoticeKind::action_failing), 0) << "after 2 tries";
    }
  }
  ASSERT_EQ(notices.count(NoticeKind::action_failing), 1);
  EXPECT_NE(notices.first(NoticeKind::action_failing)->message.find("drain failed 3 times"), std::string::npos);
  EXPECT_EQ(notices.count(NoticeKind::drain), 0);
}

TEST(Notices, AResumeCapReachedIsANotice) {
  PolicyConfig p;
  p.max_resumes = 1;
  Fixture f(p);
  RecordedNotices notices;
  f.responder->set_notices(&notices, 3);
  f.slurm.jobs[7].restart_count = 1;
  f.sweep(true, {{7, 1, true}});
  ASSERT_EQ(notices.count(NoticeKind::resume_cap), 1);
  EXPECT_EQ(notices.first(NoticeKind::resume_cap)->job_id, 7u);
  EXPECT_EQ(notices.count(NoticeKind::requeue), 0);
}

TEST(AdminActions, ADrainIsHeldNeverReturnedByHealthdAndAResumeReturnsIt) {
  PolicyConfig p;
  p.recovery_passes = 1;
  p.max_drained_share = 0.25;  // 1 of 4: the admin's own drain is not bound by it
  Fixture f(p);
  f.slurm.nodes["n1"].state = "IDLE+DRAIN";
  f.slurm.nodes["n1"].drain = true;
  RecordedNotices notices;
  f.responder->set_notices(&notices, 3);
  f.responder->admin_drain("swapping DIMM B2", 0, 41, f.now);
  f.sweep(false, {});
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: ADMIN: swapping DIMM B2");
  ASSERT_EQ(notices.count(NoticeKind::admin), 1);
  EXPECT_EQ(notices.first(NoticeKind::admin)->action, "drain");
  EXPECT_EQ(notices.first(NoticeKind::admin)->uid, std::optional<std::uint32_t>(0));
  EXPECT_EQ(notices.first(NoticeKind::admin)->request, 41u) << "healthctl waits for the notice of its own request";
  for (int i = 0; i < 6; ++i) f.sweep(false, {});
  EXPECT_EQ(f.slurm.count("resume n2"), 0) << "held: healthd never returns an admin's drain";
  f.responder->admin_resume(false, 0, 42, f.now);
  f.sweep(false, {});
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_EQ(notices.count(NoticeKind::admin), 2);
  EXPECT_FALSE(f.responder->status().contains("own_drain"));
}

TEST(AdminActions, AResumeOfSomeoneElsesDrainNeedsForce) {
  Fixture f;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE+DRAIN", "ops: cabling", {"debug"}, true};
  RecordedNotices notices;
  f.responder->set_notices(&notices, 3);
  f.responder->admin_resume(false, 0, 42, f.now);
  f.sweep(false, {});
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  ASSERT_EQ(notices.count(NoticeKind::admin), 1);
  EXPECT_NE(notices.first(NoticeKind::admin)->message.find("use --force"), std::string::npos);
  f.responder->admin_resume(true, 0, 43, f.now);
  f.sweep(false, {});
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(AdminActions, AClearedFaultFoundAgainIsANewEpisode) {
  Fixture f;
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}};  // an admin resumed it meanwhile
  f.sweep(true, {});
  EXPECT_EQ(f.slurm.count("drain n2"), 1) << "the admin's override stands for the same episode";
  f.responder->admin_clear("GPU-XID-79", 1, 0, 0, 44, f.now);
  f.sweep(true, {});
  EXPECT_EQ(f.slurm.count("drain n2"), 2) << "the admin said it was fixed; found again, it is a new fault";
}

TEST(AdminActions, JournalledAdminEntriesKeepTheirFlagsAcrossARestart) {
  ar::test::TempDir dir;
  {
    Journal j{dir / "journal.json"};
    JournalEntry drain;
    drain.kind = Action::drain;
    drain.node = "n2";
    drain.admin = drain.held = true;
    drain.request = 99;
    ASSERT_TRUE(j.add(drain));
    JournalEntry e;
    e.kind = Action::resume;
    e.node = "n2";
    e.admin = true;
    e.force = true;
    e.by_uid = 0;
    ASSERT_TRUE(j.add(e));
  }
  Journal again{dir / "journal.json"};
  ASSERT_TRUE(again.load());
  ASSERT_EQ(again.pending().size(), 2u);
  EXPECT_TRUE(again.pending()[0].admin);
  EXPECT_TRUE(again.pending()[0].held);
  EXPECT_EQ(again.pending()[0].request, 99u);
  EXPECT_FALSE(again.pending()[0].by_uid);
  EXPECT_TRUE(again.pending()[1].admin);
  EXPECT_TRUE(again.pending()[1].force);
  EXPECT_EQ(again.pending()[1].by_uid, std::optional<std::uint32_t>(0));
}

}  // namespace admin_actions_test
