// The drain entry carried out against a recording Slurm (actions/drain_executor.cpp): max_drained_share
// before and after the drain, the second look of a burst, a reboot called off past the share, and
// whose drain a reason says it is. The decisions themselves are share_policy_test's table.
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
namespace drain_executor_test {

TEST(Responder, ShareLimitWithholdsTheDrainAndReportsIt) {
  PolicyConfig p;
  p.max_drained_share = 0.5;  // 2 of 4 nodes
  Fixture f(p);
  f.slurm.nodes["n1"].state = "IDLE+DRAIN";
  f.slurm.nodes["n3"].state = "DOWN+DRAIN";
  f.slurm.nodes["n1"].drain = f.slurm.nodes["n3"].drain = true;
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_NE(f.responder->status().value("drain_withheld", "").find("withheld"), std::string::npos);
}

// A fabric-wide event: the daemons of several nodes each saw room for one more drain in the same
// instant. Looked at again with every drain in place, the ones past the share give theirs back, ranked
// by when Slurm took each drain (then by name), so that every daemon reaches the same answer.
TEST(Responder, ADrainPastTheShareByOtherDaemonsInTheSameInstantIsGivenBack) {
  PolicyConfig p;
  p.max_drained_share = 0.5;  // 2 of 4 nodes
  Fixture f(p);
  // n3 and n4 were drained by their own daemons a second before n2's drain took.
  f.slurm.after_drain = [&](const std::string&) {
    f.slurm.drained_by_its_healthd("n3", 1s);
    f.slurm.drained_by_its_healthd("n4", 1s);
  };
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_FALSE(f.slurm.nodes["n2"].drain);
  EXPECT_NE(f.responder->status().value("drain_withheld", "").find("drain of n2 undone: 2 of 4 nodes"), std::string::npos);
  // Its job stays where it is, as with a drain withheld before it was made: a requeue could restart it
  // onto the fault.
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
}

TEST(Responder, ADrainWithinTheShareAmongSimultaneousDrainsIsKept) {
  PolicyConfig p;
  p.max_drained_share = 0.5;
  Fixture f(p);
  // Drained in the same second as n2 (the same reason time): the name orders them, and n2 comes
  // before n3 and n4, so n2 is within the share and they are the ones past it.
  f.slurm.after_drain = [&](const std::string&) {
    f.slurm.drained_by_its_healthd("n3", 0s);
    f.slurm.drained_by_its_healthd("n4", 0s);
  };
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_TRUE(f.slurm.nodes["n2"].drain);
  // A burst of drains near the share: the requeue waits for the look once the second is over.
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  f.sweep(true);  // 2 s after the drain
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

// Issue 18: in a fabric-wide event, a drain given back at the look once its second is over had
// requeued its job already: a restart for nothing, the node back in service. In a burst near the
// share the requeue now waits for that look, and the job of a drain given back stays as it is.
TEST(Responder, ADrainGivenBackAtTheSecondLookInABurstHasNotRequeuedItsJob) {
  PolicyConfig p;
  p.max_drained_share = 0.25;  // 1 of 4
  Fixture f(p);
  // n3's daemon drained n3 in n2's second, before n2's look: a burst, ranked behind n2.
  f.slurm.after_drain = [&](const std::string&) { f.slurm.drained_by_its_healthd("n3", 0s); };
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  // n1's daemon drained n1 in that second too, after n2's look: n1 ranks ahead and fills the share.
  f.drained_in_the_last_sweeps_second("n1");
  for (int i = 0; i < 4; ++i) f.sweep(true);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_FALSE(f.slurm.nodes["n2"].drain);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_EQ(f.slurm.jobs[7].state, "RUNNING");
}

// After a restart the requeue still waits for the look (the journal has it), but never for a look
// further off than one is ever due (a state file's, a clock stepped back): the job is not held.
TEST(Responder, AfterARestartTheRequeueWaitsForTheLookButNotForOneFarOff) {
  for (bool far_off : {false, true}) {
    SCOPED_TRACE(far_off ? "the look an hour off" : "the look as saved");
    PolicyConfig p;
    p.max_drained_share = 0.5;
    Fixture f(p);
    f.slurm.after_drain = [&](const std::string&) {
      f.slurm.drained_by_its_healthd("n3", 0s);
      f.slurm.drained_by_its_healthd("n4", 0s);
    };
    const WallTime drained_at = f.now;
    f.sweep(true);
    ASSERT_EQ(f.slurm.count("requeue 7"), 0);
    Journal reloaded(f.dir / "journal.json");
    ASSERT_TRUE(reloaded.load());
    ASSERT_TRUE(reloaded.own_drain() && reloaded.own_drain()->share_look);
    if (far_off) reloaded.own_drain()->share_look = drained_at + 1h;
    Responder again("n2", f.policy, f.slurm, reloaded, f.timeline);
    const int reads = f.slurm.table_reads;
    again.run_due(drained_at + 2s);
    EXPECT_EQ(f.slurm.count("requeue 7"), 1);
    EXPECT_EQ(f.slurm.table_reads, far_off ? reads : reads + 1);  // the look made first, as saved
    EXPECT_TRUE(f.slurm.nodes["n2"].drain);
  }
}

// A few faulty nodes of one job drained together: the job is requeued for the others anyway, so it
// does not wait for the look (bench/scale.sh's burst: no slower than a single fault).
TEST(Responder, AJobOnAnotherNodeOfTheBurstIsRequeuedAtOnce) {
  PolicyConfig p;
  p.max_drained_share = 0.5;
  Fixture f(p);
  f.slurm.jobs[7].nodes = {"n1", "n2"};
  f.slurm.after_drain = [&](const std::string&) { f.slurm.drained_by_its_healthd("n1", 0s); };
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

// A healthd drain more than 2 s before ours, or anyone else's drain, is no burst: the requeue
// follows the drain at once, as for a single fault.
TEST(Responder, DrainsOutsideABurstDoNotHoldTheRequeue) {
  PolicyConfig p;
  p.max_drained_share = 0.75;  // 3 of 4
  Fixture f(p);
  f.slurm.after_drain = [&](const std::string&) {
    f.slurm.drained_by_its_healthd("n3", 3s);
    f.slurm.drained_by_an_admin("n4");  // this second
  };
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

TEST(Responder, AnAdminsDrainCountsAheadOfOursWheneverItWasMade) {
  PolicyConfig p;
  p.max_drained_share = 0.5;
  Fixture f(p);
  // An admin drained n3 and n4 just after n2's drain took: theirs are not given back, so n2's is.
  f.slurm.after_drain = [&](const std::string&) {
    for (const char* n : {"n3", "n4"}) f.slurm.drained_by_an_admin(n, 1s);
  };
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_TRUE(f.slurm.nodes["n3"].drain);
  EXPECT_TRUE(f.slurm.nodes["n4"].drain);
}

// Issue 18: at 64 nodes a fabric-wide event passed the share (27 of 25). A drain of the same second
// as ours with a smaller name ranks ahead of ours, but it may land after our first look. Once that
// second is over, the look again sees it, and ours (past the share) is given back.
TEST(Responder, ASameSecondDrainThatLandsAfterTheFirstLookIsRankedAtTheSecondLook) {
  PolicyConfig p;
  p.max_drained_share = 0.25;  // 1 of 4 nodes
  Fixture f(p);
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);  // nothing ahead of it at the first look
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  // n1's daemon drained n1 in the same second as n2, just after n2's first look.
  f.drained_in_the_last_sweeps_second("n1");
  f.responder->run_due(f.now);  // 1 s after the drain: the second may not be over yet
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  f.now += 1s;
  f.responder->run_due(f.now);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_FALSE(f.slurm.nodes["n2"].drain);
  EXPECT_TRUE(f.slurm.nodes["n1"].drain);
  EXPECT_NE(f.responder->status().value("drain_withheld", "").find("drain of n2 undone: 1 of 4 nodes"), std::string::npos);
  EXPECT_FALSE(f.responder->status().contains("own_drain"));  // no longer ours: never resumed again
  for (int i = 0; i < 3; ++i) f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);  // nothing flaps: the fault is withheld from now on
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

// The other side of the same race: n3 drained in n2's second after n2's first look. n2 ranks ahead
// of it, so n2's second look keeps n2's drain (n3's gives n3's back).
TEST(Responder, ADrainAheadOfTheSameSecondDrainsLandingAfterItIsKeptAtTheSecondLook) {
  PolicyConfig p;
  p.max_drained_share = 0.25;
  Fixture f(p);
  f.sweep(true);
  f.drained_in_the_last_sweeps_second("n3");
  for (int i = 0; i < 3; ++i) f.sweep(true);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_TRUE(f.slurm.nodes["n2"].drain);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

// The second look is saved with the drain: a daemon killed between the drain and the look makes it
// after its restart.
TEST(Responder, TheSecondLookAtTheShareIsMadeAfterARestart) {
  PolicyConfig p;
  p.max_drained_share = 0.25;
  Fixture f(p);
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  f.drained_in_the_last_sweeps_second("n1");
  Journal reloaded(f.dir / "journal.json");
  ASSERT_TRUE(reloaded.load());
  ASSERT_TRUE(reloaded.own_drain());
  ASSERT_TRUE(reloaded.own_drain()->share_look);
  Responder again("n2", f.policy, f.slurm, reloaded, f.timeline);
  EXPECT_LE(*again.next_due(), f.now + 1s);  // the engine wakes for it
  again.run_due(f.now + 5s);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_FALSE(reloaded.own_drain());
}

// A reboot is a drain too: past the share it is called off (resume clears the request) as long as
// slurmd has not been told to reboot; a reboot under way is left to finish (Slurm returns the node).
TEST(Responder, ARebootPastTheShareIsCalledOffUnlessItIsUnderWay) {
  for (bool issued : {false, true}) {
    SCOPED_TRACE(issued ? "reboot issued" : "reboot requested");
    PolicyConfig p;
    p.max_drained_share = 0.25;
    Fixture f(p);
    f.sweep(true, {{7, 0, true}}, Remedy::reboot);
    ASSERT_EQ(f.slurm.count("reboot n2"), 1);
    f.drained_in_the_last_sweeps_second("n1");
    f.slurm.nodes["n2"].reboot_issued = issued;
    f.now += 2s;
    f.responder->run_due(f.now);
    EXPECT_EQ(f.slurm.count("resume n2"), issued ? 0 : 1);
    EXPECT_EQ(f.slurm.nodes["n2"].reboot, issued);
  }
}

// At max_drained_share = 1 no drain can be held back: nothing reads the node table for it.
TEST(Responder, AShareOfOneReadsNoNodeTable) {
  PolicyConfig p;
  p.max_drained_share = 1.0;
  Fixture f(p);
  for (int i = 0; i < 4; ++i) f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.table_reads, 0);
  Fixture g;  // the default share (0.5): a look before the drain, one just after, one once its second is over
  for (int i = 0; i < 4; ++i) g.sweep(true);
  EXPECT_EQ(g.slurm.table_reads, 3);
}

// Issue 11: the share cap is judged on a large partition as Slurm answers it (the text read was cut
// at 64 KiB, about 90 nodes, and then withheld every drain as "0 of 0 drained").
TEST(Responder, TheShareCapIsJudgedOverEveryNodeOfALargePartition) {
  PolicyConfig p;
  p.max_drained_share = 0.1;
  // n1..n4 are the fixture's; n5..n120 join the partition, of which `drained` from n10 on are drained.
  auto large_partition = [](FakeSlurm& slurm, int drained) {
    for (int i = 5; i <= 120; ++i) slurm.nodes["n" + std::to_string(i)] = NodeInfo{"n" + std::to_string(i), "IDLE", "", {"debug"}};
    for (int i = 10; i < 10 + drained; ++i) slurm.nodes["n" + std::to_string(i)].drain = true;
  };
  Fixture f(p);
  large_partition(f.slurm, 10);  // 10 of 120 drained
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);  // 11 of 120 is within 10 %
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);

  Fixture g(p);
  large_partition(g.slurm, 12);  // 12 of 120
  g.sweep(true);
  EXPECT_EQ(g.slurm.count("drain n2"), 0);
  EXPECT_NE(g.responder->status()["drain_withheld"].get<std::string>().find("12 of 120"), std::string::npos);
  EXPECT_EQ(g.slurm.count("requeue 7"), 0);  // the node is still in service: not requeued onto it
}

TEST(Responder, AnAdminsDrainReasonHoldingStateWordsIsTheirs) {
  Fixture f;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "MIXED+DRAIN", "bad disk State=IDLE see ticket", {"debug"}, true};
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "bad disk State=IDLE see ticket");
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);  // drained (by the admin): the job may leave it
  for (int i = 0; i < 6; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);  // never resumes an admin's drain
}

// Issue 11: text healthd itself put in a drain reason (from a kernel-log line or a script's output)
// cannot make its own drain look like someone else's: it is given back as usual.
TEST(Responder, ItsOwnDrainReasonHoldingForgedFieldsIsStillItsOwn) {
  Fixture f;
  CheckResult forged = kernel_log_result(true);
  forged.message = "Reason=forged State=RESUME Partitions=none";
  f.responder->on_sweep({forged}, {{7, 0, true}}, std::nullopt, f.now);
  f.responder->run_due(f.now);
  f.now += 1s;
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: Reason=forged State=RESUME Partitions=none");
  for (int i = 0; i < 8; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

}  // namespace drain_executor_test
