// The responder's policy against a recording Slurm: what it drains, requeues and resumes, and what it
// never touches.
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


TEST(Responder, FaultDrainsAndRequeuesOnceAcrossSweeps) {
  Fixture f;
  f.sweep(true);
  f.sweep(true);
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: fallen off the bus");
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("attempt 1 ended: GPU-XID-79 on n2"), std::string::npos);
}

TEST(Responder, JobRequeuedByAnotherNodeIsNotRequeuedAgain) {
  Fixture f;
  f.slurm.jobs[7].restart_count = 1;  // another healthd won the race
  f.slurm.jobs[7].state = "PENDING";
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_TRUE(f.timeline.has_event(7, "requeued elsewhere"));
}

TEST(Responder, JobsWithoutTheFlagAreNeverRequeued) {
  Fixture f;
  f.sweep(true, {{7, 0, false}});
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
}

TEST(Responder, CapReachedLeavesTheJobAndSaysWhy) {
  PolicyConfig p;
  p.max_resumes = 1;
  Fixture f(p);
  f.slurm.jobs[7].restart_count = 1;
  f.sweep(true, {{7, 1, true}});
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("cap of 1 resumes is reached"), std::string::npos);
  // hung on the faulty node: it ends, as a failed step would have ended it
  EXPECT_EQ(f.slurm.count("cancel 7"), 1);
  f.sweep(true, {{7, 1, true}});
  EXPECT_EQ(f.slurm.count("cancel 7"), 1);
}

TEST(Responder, TheUserMayLowerTheCapButNotRaiseIt) {
  Fixture lowered;  // admin cap 3, user cap 0
  lowered.sweep(true, {{7, 0, true, 0u}});
  EXPECT_EQ(lowered.slurm.count("requeue 7"), 0);
  EXPECT_NE(lowered.slurm.jobs[7].admin_comment.find("cap of 0 resumes"), std::string::npos);

  PolicyConfig p;
  p.max_resumes = 1;
  Fixture raised(p);
  raised.slurm.jobs[7].restart_count = 1;
  raised.sweep(true, {{7, 1, true, 10u}});
  EXPECT_EQ(raised.slurm.count("requeue 7"), 0);
  EXPECT_NE(raised.slurm.jobs[7].admin_comment.find("cap of 1 resumes"), std::string::npos);
}

TEST(Responder, AdminDrainIsNeverTakenOverNorResumed) {
  Fixture f;
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE+DRAIN", "admin: DIMM", {"debug"}, true};
  f.sweep(true);
  for (int i = 0; i < 10; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "admin: DIMM");
}

TEST(Responder, OwnDrainResumedAfterRecoveryPasses) {
  PolicyConfig p;
  p.recovery_passes = 3;
  Fixture f(p);
  f.sweep(true);
  f.sweep(false);
  f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(Responder, ARebootFaultAsksSlurmToRebootAndRequeuesTheJob) {
  Fixture f;
  f.sweep(true, {{7, 0, true}}, Action::reboot);
  f.sweep(true, {{7, 0, true}}, Action::reboot);
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: fallen off the bus");
}

TEST(Responder, WithoutARebootProgramTheNodeIsDrainedAndTheReasonSaysAReboot) {
  Fixture f;
  f.slurm.reboot_program = false;
  f.sweep(true, {{7, 0, true}}, Action::reboot);
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  // The reboot cannot run here: held for an admin, the reason says what the node needs (issue 31).
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: fallen off the bus (needs a reboot: slurm.conf has no RebootProgram)");
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  ASSERT_TRUE(f.journal.own_drain());
  EXPECT_TRUE(f.journal.own_drain()->held);
}

TEST(Responder, ANodeWaitingForItsRebootIsNotResumedByHealthd) {
  PolicyConfig p;
  p.recovery_passes = 1;
  Fixture f(p);
  f.sweep(true, {{7, 0, true}}, Action::reboot);
  for (int i = 0; i < 3; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  // Back in service after it (an admin resumed it): healthd forgets its drain and never resumes it.
  f.slurm.nodes["n2"].state = "IDLE";
  f.slurm.nodes["n2"].drain = false;
  f.slurm.nodes["n2"].reason.clear();
  f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_FALSE(f.journal.own_drain().has_value());
}

// Issue 31: the reboot leaves the node drained (no nextstate=RESUME) with healthd's reason, so it is
// never in service before healthd has judged it; healthd returns it, as its own drain, once healthy.
TEST(Responder, ANodeBackFromItsRebootStaysDrainedUntilHealthdReturnsIt) {
  PolicyConfig p;
  p.recovery_passes = 1;
  Fixture f(p);
  f.sweep(true, {{7, 0, true}}, Action::reboot);
  f.slurm.rebooted("n2");
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: fallen off the bus : reboot issued");
  for (int i = 0; i < 4 && f.slurm.count("resume n2") == 0; ++i) {
    EXPECT_TRUE(f.slurm.nodes["n2"].drain);
    f.sweep(false);
  }
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_FALSE(f.journal.own_drain().has_value());
}

TEST(Responder, PollSweepsActOnFaultsButDoNotCountAsHealthyPasses) {
  PolicyConfig p;
  p.recovery_passes = 2;
  Fixture f(p);
  f.sweep(true);
  CheckResult ok;
  ok.check = "ec2";
  for (int i = 0; i < 5; ++i) {
    f.responder->on_sweep({ok}, {}, std::nullopt, f.now, /*full_pass=*/false);
    f.responder->run_due(f.now);
    f.now += 1s;
  }
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  f.sweep(false);
  f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(Responder, RepeatedFaultsKeepTheNodeOutForAnAdmin) {
  PolicyConfig p;
  p.flap_max_faults = 2;
  p.recovery_passes = 1;
  Fixture f(p);
  f.sweep(true);
  f.sweep(false);  // resumed after the first fault
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  f.sweep(true);   // the second fault within the window
  for (int i = 0; i < 5; ++i) f.sweep(false);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_NE(f.slurm.nodes["n2"].reason.find("kept out until an admin resumes it"), std::string::npos);
}

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
    f.sweep(true, {{7, 0, true}}, Action::reboot);
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

TEST(Responder, SlurmNotAnsweringKeepsTheActionsPendingUntilItDoes) {
  Fixture f;
  f.slurm.answering = false;
  f.sweep(true);
  EXPECT_EQ(f.journal.pending().size(), 2u);
  f.slurm.answering = true;
  f.now += 120s;  // past the backoff
  f.responder->run_due(f.now);
  EXPECT_TRUE(f.journal.pending().empty());
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

// Seen with bench/outage.sh: while slurmctld was down each call took about 9 s to fail, and the
// wait before the next try (2 s, 4 s, 8 s ...) was counted from before the call, so it was over
// when the call failed: every daemon asked again at once, as long as slurmctld was away. The wait
// now starts when the call has failed.
TEST(Responder, TheWaitBeforeTryingAgainStartsWhenTheCallHasFailed) {
  Fixture f;
  ASSERT_TRUE(f.slurm.node("n2"));  // Slurm answered once (the daemon's start), then went away
  f.responder->run_due(f.now);
  f.slurm.answering = false;
  f.slurm.fail_after = 1200ms;
  const auto tried_at = f.now;
  f.sweep(true);
  ASSERT_FALSE(f.journal.pending().empty());
  const auto& drain = f.journal.pending().front();
  ASSERT_EQ(drain.kind, Action::drain);
  ASSERT_EQ(drain.attempts, 1u);
  // The first wait is 1 to 2 s (2 s less a random part of up to half), after the 1.2 s the call took.
  EXPECT_GE(drain.next_try - tried_at, 1200ms + 1s);
  EXPECT_LE(drain.next_try - tried_at, 1200ms + 2s + 500ms);
}

TEST(Responder, ARestartedDaemonFinishesThePendingRequeueOnce) {
  Fixture f;
  f.slurm.answering = false;
  f.sweep(true);
  ASSERT_EQ(f.journal.pending().size(), 2u);
  // The daemon dies here. A new one loads the journal and carries on.
  Journal reloaded(f.dir / "journal.json");
  ASSERT_TRUE(reloaded.load());
  Responder again("n2", f.policy, f.slurm, reloaded, f.timeline);
  f.slurm.answering = true;
  again.run_due(f.now + 1h);
  again.run_due(f.now + 2h);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_TRUE(reloaded.pending().empty());
}

TEST(Responder, ApplicationFailureOnAHealthyNodeDoesNothingByDefault) {
  Fixture f;
  f.responder->on_sweep({}, {{7, 0, true}}, StepFailure{7, 0, 0, 0, 768, true}, f.now);
  f.responder->run_due(f.now);
  EXPECT_TRUE(f.slurm.calls.empty());
  EXPECT_TRUE(f.timeline.has_event(7, "no fault here"));
}

TEST(Responder, TheBatchStepIsNamedSoInTheTimelineNotByItsNumber) {
  Fixture f;
  f.responder->on_sweep({}, {{7, 0, true}}, StepFailure{7, ar::proto::kBatchStep, 0, 0, 768, true}, f.now);
  auto events = f.timeline.events(7);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().detail, "task 0 of step batch failed and node n2 checked healthy: nothing to do on this node");
}

TEST(Responder, ResumeOnAnyFailurePolicyRequeuesWithoutDrain) {
  PolicyConfig p;
  p.resume_on_any_failure = true;
  Fixture f(p);
  f.responder->on_sweep({}, {{7, 0, true}}, StepFailure{7, 0, 0, 0, 768, true}, f.now);
  f.responder->run_due(f.now);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
}

namespace {
CheckResult notice(std::chrono::seconds grace) {
  CheckResult r;
  r.check = "ec2";
  r.status = Status::fault;
  r.code = "EC2-SPOT-TERMINATE";
  r.message = "ec2: spot instance-action terminate at 2027-01-05T18:02:00Z";
  r.action = Action::drain;
  r.checkpoint_first = CheckpointFirst{"USR1", grace};
  return r;
}
}  // namespace

TEST(Responder, ANoticeSignalsTheJobThenDrainsAndRequeuesAfterTheGrace) {
  Fixture f;
  const std::vector<LocalJob> jobs = {{7, 0, true}, {8, 0, false}};
  f.slurm.jobs[8] = JobInfo{8, "RUNNING", "", 0, "n2", ""};
  f.responder->on_sweep({notice(30s)}, jobs, std::nullopt, f.now);
  f.responder->run_due(f.now);
  // The job checkpoints (not the job without the flag), then no new job may land on the node.
  EXPECT_EQ(f.slurm.calls, (std::vector<std::string>{"signal 7 USR1", "drain n2"}));
  EXPECT_TRUE(f.timeline.has_event(7, "checkpoint signal"));
  for (int i = 1; i < 30; ++i) {  // the grace: sweeps see the notice again, nothing more happens
    f.responder->on_sweep({notice(30s)}, jobs, std::nullopt, f.now + std::chrono::seconds(i));
    f.responder->run_due(f.now + std::chrono::seconds(i));
  }
  EXPECT_EQ(f.slurm.calls.size(), 2u);
  f.responder->run_due(f.now + 30s);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("requeue 8"), 0);
  EXPECT_EQ(f.slurm.count("signal 7 USR1"), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: EC2-SPOT-TERMINATE: ec2: spot instance-action terminate at 2027-01-05T18:02:00Z");
}

TEST(Responder, WithNoCheckpointSignalSetNoJobIsSignalledButAllAreRequeuedAfterTheGrace) {
  Fixture f;
  auto quiet = notice(30s);
  quiet.checkpoint_first->signal = "";  // [checks.ec2] checkpoint_signal's default
  f.slurm.jobs[8] = JobInfo{8, "RUNNING", "", 0, "n2", ""};
  f.responder->on_sweep({quiet}, {{7, 0, true}, {8, 0, true}}, std::nullopt, f.now);
  f.responder->run_due(f.now);
  // A bash or Python job without a handler would die of a signal it did not ask for.
  for (const auto& call : f.slurm.calls) EXPECT_FALSE(call.starts_with("signal")) << call;
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_TRUE(f.timeline.has_event(7, "no checkpoint signal"));
  EXPECT_TRUE(f.timeline.has_event(8, "no checkpoint signal"));
  f.responder->on_sweep({quiet}, {{7, 0, true}, {8, 0, true}}, std::nullopt, f.now + 1s);
  f.responder->run_due(f.now + 30s);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("requeue 8"), 1);
}

TEST(Responder, ReportOnlyDecidesAndSaysSoButDoesNothing) {
  PolicyConfig p;
  p.report_only = true;
  Fixture f(p);
  for (int i = 0; i < 5; ++i) f.sweep(true);
  EXPECT_TRUE(f.slurm.calls.empty()) << f.slurm.calls.front();
  EXPECT_TRUE(f.journal.pending().empty());
  EXPECT_TRUE(f.timeline.has_event(7, "report only"));
  // Said once per episode, not at every sweep.
  int said = 0;
  for (const auto& e : f.timeline.events(7)) said += e.event == "report only";
  EXPECT_EQ(said, 1);
  // Turned off: the next sweep acts on the fault.
  p.report_only = false;
  f.responder->set_policy(p);
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

TEST(Responder, FaultsOnlyReportedDoNotCountTowardsFlapping) {
  PolicyConfig p;
  p.report_only = true;
  p.flap_max_faults = 2;
  Fixture f(p);
  for (int i = 0; i < 3; ++i) {  // three reported episodes
    f.sweep(true);
    f.sweep(false);
  }
  p.report_only = false;
  p.check_interval = 1s;
  f.responder->set_policy(p);
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason.find("kept out"), std::string::npos) << f.slurm.nodes["n2"].reason;
}

TEST(Responder, LeavingReportOnlyDoesNotDrainAgainForAFaultItDrainedBefore) {
  Fixture f;
  f.sweep(true);  // drained for the fault, and the job requeued
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  PolicyConfig p;
  p.check_interval = 1s;
  p.report_only = true;
  f.responder->set_policy(p);
  f.sweep(true);
  p.report_only = false;
  f.responder->set_policy(p);
  f.slurm.nodes["n2"].drain = false;  // an admin resumed it meanwhile
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
}

TEST(Responder, ReportOnlyStillFinishesWhatWasJournalledBefore) {
  Fixture f;
  f.slurm.answering = false;
  f.sweep(true);  // drain and requeue journalled, Slurm not answering
  EXPECT_FALSE(f.journal.pending().empty());
  PolicyConfig p;
  p.report_only = true;
  p.check_interval = 1s;
  f.responder->set_policy(p);
  f.slurm.answering = true;
  for (int i = 0; i < 10; ++i) f.sweep(true);  // Slurm is asked again every 5 s
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

TEST(Responder, ACheckpointSignalIsNeitherLostNorRepeatedAcrossARestart) {
  Fixture f;
  f.slurm.answering = false;  // decided and journalled, but Slurm does not answer
  f.responder->on_sweep({notice(60s)}, {{7, 0, true}}, std::nullopt, f.now);
  f.responder->run_due(f.now);
  EXPECT_EQ(f.slurm.count("signal 7 USR1"), 0);
  // healthd restarts: the journal is read back, and the signal is sent once Slurm answers
  f.slurm.answering = true;
  Journal reloaded(f.dir / "journal.json");
  ASSERT_TRUE(reloaded.load());
  Responder again("n2", f.policy, f.slurm, reloaded, f.timeline);
  again.run_due(f.now + 5s);
  EXPECT_EQ(f.slurm.count("signal 7 USR1"), 1);
  // and restarted once more, with the notice still up: not signalled twice
  Journal third_journal(f.dir / "journal.json");
  ASSERT_TRUE(third_journal.load());
  Responder third("n2", f.policy, f.slurm, third_journal, f.timeline);
  third.on_sweep({notice(60s)}, {{7, 0, true}}, std::nullopt, f.now + 6s);
  third.run_due(f.now + 6s);
  EXPECT_EQ(f.slurm.count("signal 7 USR1"), 1);
  third.run_due(f.now + 61s);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
}

TEST(Responder, AHardwareFaultDuringTheGraceDoesNotWaitForIt) {
  Fixture f;
  f.responder->on_sweep({notice(60s)}, {{7, 0, true}}, std::nullopt, f.now);
  f.responder->run_due(f.now);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  f.now += 2s;
  f.sweep(true);  // XID 79 on top of the notice
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: fallen off the bus");
}

// ---- Issue 10: promises kept under faults ----

namespace {
// Runs the incident of Fixture::sweep(true) on a daemon killed at Slurm call `kill_at`, then on a
// restarted daemon (journal read back from disk) until nothing is pending.
struct KilledIncident {
  Fixture f;
  std::unique_ptr<Journal> journal;
  std::unique_ptr<Responder> responder;
  bool died = false;
  int calls_before_restart = 0;

  KilledIncident(int kill_at, bool after) {
    f.slurm.completing_reads = 3;
    f.slurm.kill_at = kill_at;
    f.slurm.kill_after = after;
    try {
      f.sweep(true);
      for (int i = 0; i < 20 && !f.journal.pending().empty(); ++i) f.responder->run_due(f.now += 100ms);
    } catch (const Killed&) {
      died = true;
    }
    f.slurm.kill_at = 0;
    calls_before_restart = f.slurm.call_no;
    journal = std::make_unique<Journal>(f.dir / "journal.json");
    EXPECT_TRUE(journal->load());
    responder = std::make_unique<Responder>("n2", f.policy, f.slurm, *journal, f.timeline);
    // After the restart the node is still faulty: sweeps go on, and the journal is replayed.
    for (int i = 0; i < 40 && (i < 3 || !journal->pending().empty()); ++i) {
      std::vector<LocalJob> jobs;
      if (f.slurm.jobs[7].restart_count == 0 && f.slurm.jobs[7].state == "RUNNING") jobs.push_back({7, 0, true});
      responder->on_sweep({kernel_log_result(true)}, jobs, std::nullopt, f.now);
      responder->run_due(f.now);
      f.now += 100ms;
    }
  }
};
}  // namespace

// Item 9: healthd SIGKILLed between `scontrol requeue` and the hold release left the job held for
// Slurm's two minutes. Killed before or after any Slurm call of the incident, the restarted daemon
// finishes every step once: one requeue, the comment set, the hold released once the job is PENDING.
TEST(ResponderUnderKills, EveryStepIsFinishedOnceWhereverTheDaemonDies) {
  int calls = 0;
  {
    KilledIncident clean(0, false);
    calls = clean.calls_before_restart;
    EXPECT_EQ(clean.f.slurm.count("release 7"), 1);
  }
  ASSERT_GE(calls, 6);
  for (int at = 1; at <= calls; ++at)
    for (bool after : {false, true}) {
      SCOPED_TRACE("killed " + std::string(after ? "after" : "before") + " Slurm call " + std::to_string(at));
      KilledIncident k(at, after);
      EXPECT_TRUE(k.died);
      EXPECT_EQ(k.f.slurm.count("drain n2"), 1);
      EXPECT_EQ(k.f.slurm.count("requeue 7"), 1);
      EXPECT_EQ(k.f.slurm.jobs[7].restart_count, 1u);
      EXPECT_GE(k.f.slurm.count("release 7"), 1);
      EXPECT_EQ(k.f.slurm.count("release too early 7"), 0);
      EXPECT_NE(k.f.slurm.jobs[7].admin_comment.find("attempt 1 ended: GPU-XID-79 on n2"), std::string::npos);
      EXPECT_TRUE(k.journal->pending().empty());
      // the comment comes before the release: the restarted job reads it
      auto comment = std::find(k.f.slurm.calls.begin(), k.f.slurm.calls.end(), "comment 7");
      auto release = std::find(k.f.slurm.calls.begin(), k.f.slurm.calls.end(), "release 7");
      EXPECT_LT(comment - k.f.slurm.calls.begin(), release - k.f.slurm.calls.begin());
    }
}

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

// Item 10: an admin resumed a node whose fault persisted; every auto-resume job landing there was
// requeued, until one reached its cap. Now it is said once and no job is requeued onto the fault.
TEST(Responder, AnAdminResumeOfAStillFaultyNodeIsRespectedWithoutARequeueLoop) {
  Fixture f;
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("requeue 7"), 1);
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}};  // scontrol update state=resume
  for (std::uint32_t id = 8; id < 12; ++id) {
    f.slurm.jobs[id] = JobInfo{id, "RUNNING", "", 0, "n2", ""};
    for (int i = 0; i < 3; ++i) f.sweep(true, {{id, 0, true}});
    EXPECT_EQ(f.slurm.count("requeue " + std::to_string(id)), 0);
    EXPECT_TRUE(f.timeline.has_event(id, "not requeued"));
  }
  EXPECT_EQ(f.slurm.count("drain n2"), 1);  // the admin's decision stands
  EXPECT_NE(f.responder->status().value("admin_override", "").find("GPU-XID-79"), std::string::npos);
  // Once the node checks healthy, the next fault is a new episode: drained again, requeued again.
  f.sweep(false);
  EXPECT_FALSE(f.responder->status().contains("admin_override"));
  f.slurm.jobs[20] = JobInfo{20, "RUNNING", "", 0, "n2", ""};
  f.sweep(true, {{20, 0, true}});
  EXPECT_EQ(f.slurm.count("drain n2"), 2);
  EXPECT_EQ(f.slurm.count("requeue 20"), 1);
}

// Item 13: after Slurm errors the requeue's backoff was reset every sweep while the drain kept its
// own, and a job was released 11 s before its faulty node was drained.
TEST(Responder, ARequeueNeverOvertakesTheDrainOfItsNode) {
  Fixture f;
  f.slurm.drain_fails = true;
  for (int i = 0; i < 30; ++i) f.sweep(true);  // a sweep a second for 30 s, the drain failing
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_EQ(f.slurm.count("release 7"), 0);
  f.slurm.drain_fails = false;
  f.now += 61s;  // past the drain's backoff
  f.sweep(true);
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  ASSERT_EQ(f.slurm.count("requeue 7"), 1);
  auto drain = std::find(f.slurm.calls.begin(), f.slurm.calls.end(), "drain n2");
  auto requeue = std::find(f.slurm.calls.begin(), f.slurm.calls.end(), "requeue 7");
  EXPECT_LT(drain, requeue);
}

TEST(Responder, AWithheldDrainWithholdsTheRequeueToo) {
  PolicyConfig p;
  p.max_drained_share = 0.5;
  Fixture f(p);
  f.slurm.nodes["n1"].state = "IDLE+DRAIN";
  f.slurm.nodes["n3"].state = "DOWN+DRAIN";
  f.slurm.nodes["n1"].drain = f.slurm.nodes["n3"].drain = true;
  f.sweep(true);
  f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_TRUE(f.timeline.has_event(7, "not requeued"));
}

// Item 12: Journal::add carried the action out even when its save failed.
TEST(Responder, NothingIsCarriedOutUntilTheJournalIsWritten) {
  ar::test::TempDir dir;
  FakeSlurm slurm;
  for (const char* n : {"n1", "n2", "n3"}) slurm.nodes[n] = NodeInfo{n, "IDLE", "", {"debug"}};
  slurm.jobs[7] = JobInfo{7, "RUNNING", "", 0, "n[1-2]", ""};
  const auto state = dir / "state";  // missing: every journal write fails, as on a full filesystem
  Journal journal(state / "journal.json");
  Timeline timeline(dir / "timeline.json");
  Responder r("n2", PolicyConfig{}, slurm, journal, timeline);
  const CheckResult fault = kernel_log_result(true);
  WallTime now = WallTime(std::chrono::seconds(1'800'000'000));
  for (int i = 0; i < 5; ++i) {
    r.on_sweep({fault}, {{7, 0, true}}, std::nullopt, now);
    r.run_due(now);
    now += 1s;
  }
  EXPECT_TRUE(slurm.calls.empty());
  EXPECT_FALSE(r.status().value("journal_written", true));
  std::filesystem::create_directory(state);  // space freed
  r.run_due(now);
  EXPECT_EQ(slurm.count("drain n2"), 1);
  EXPECT_EQ(slurm.count("requeue 7"), 1);
  Journal back(state / "journal.json");
  ASSERT_TRUE(back.load());
  EXPECT_TRUE(back.pending().empty());
  EXPECT_TRUE(back.requeued(7, 0));
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

// Issue 11: a daemon whose node_name Slurm does not know acts on nothing, and says so; it starts
// acting once the name is known (or slurmctld answers).
TEST(Responder, NothingIsCarriedOutUntilSlurmKnowsThisNode) {
  ar::test::TempDir dir;
  FakeSlurm slurm;
  Journal journal{dir / "journal.json"};
  Timeline timeline{dir / "timeline.json"};
  PolicyConfig p;
  p.check_interval = 1s;
  slurm.nodes["n1"] = NodeInfo{"n1", "IDLE", "", {"debug"}};
  slurm.jobs[7] = JobInfo{7, "RUNNING", "", 0, "n1", ""};
  Responder r("gpu-typo", p, slurm, journal, timeline);
  WallTime now(std::chrono::seconds(1'800'000'000));
  for (int i = 0; i < 12; ++i, now += 1s) {
    r.on_sweep({kernel_log_result(true)}, {{7, 0, true}}, std::nullopt, now);
    r.run_due(now);
  }
  EXPECT_TRUE(slurm.calls.empty());
  EXPECT_FALSE(journal.pending().empty());  // decided, kept, not carried out
  ASSERT_TRUE(r.status().contains("slurm"));
  EXPECT_NE(r.status()["slurm"].get<std::string>().find("node_name"), std::string::npos);
  // Not asked at every sweep: every 2.5 to 5 s (a random part, so that daemons do not ask together),
  // so 3 or 4 times in these 12 s of sweeps a second apart.
  EXPECT_GE(slurm.call_no, 3);
  EXPECT_LE(slurm.call_no, 4);
  slurm.nodes["gpu-typo"] = NodeInfo{"gpu-typo", "IDLE", "", {"debug"}};
  now += 5s;
  r.run_due(now);
  EXPECT_EQ(slurm.count("drain gpu-typo"), 1);
  EXPECT_FALSE(r.status().contains("slurm"));
}

TEST(Responder, SlurmNotAnsweringAtStartIsRetriedWithoutActing) {
  Fixture f;
  f.slurm.answering = false;
  f.sweep(true);
  f.sweep(true);
  EXPECT_TRUE(f.slurm.calls.empty());
  ASSERT_TRUE(f.responder->status().contains("slurm"));
  EXPECT_NE(f.responder->status()["slurm"].get<std::string>().find("not answering"), std::string::npos);
  f.slurm.answering = true;
  for (int i = 0; i < 6; ++i) f.sweep(true);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
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

// ---- Hooks ([[policy.hook]]): an admin's program after an action, through the journal ------------

namespace {
struct HookCall {
  std::vector<std::string> argv;
  std::vector<std::string> env;
};

HookConfig hook(std::string name, std::vector<Action> on, std::uint32_t attempts = 3) {
  HookConfig h;
  h.name = std::move(name);
  h.on = std::move(on);
  h.command = {"/usr/local/bin/ticket", "--node", "%n"};
  h.attempts = attempts;
  return h;
}

// Stands in for the process runner. Hooks run on threads of their own: calls are kept under a lock.
struct HookRecorder {
  std::mutex mutex;
  std::vector<HookCall> calls;
  ProcessResult answer{0};
  HookRunner runner() {
    return [this](const std::vector<std::string>& argv, const std::vector<std::string>& env, std::chrono::milliseconds) {
      std::lock_guard lock(mutex);
      calls.push_back({argv, env});
      return std::expected<ProcessResult, std::string>(answer);
    };
  }
  std::vector<HookCall> seen() {
    std::lock_guard lock(mutex);
    return calls;
  }
};

// Carries out the journal until nothing is pending, or 10 s pass: a hook's thread answers in its own
// time. Each pass is a second later on the responder's clock, so retries come due.
void settle(Fixture& f, Responder& r) {
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       !f.journal.pending().empty() && std::chrono::steady_clock::now() < deadline;) {
    r.run_due(f.now);
    f.now += 1s;
    std::this_thread::sleep_for(2ms);
  }
}

void with_hooks(Fixture& f, HookRecorder& rec) {
  f.responder = std::make_unique<Responder>("n2", f.policy, f.slurm, f.journal, f.timeline, rec.runner());
}
}  // namespace

TEST(Hooks, ADrainRunsTheAdminsHookOnceWithWhatHappened) {
  PolicyConfig p;
  p.hooks = {hook("ticket", {Action::drain}), hook("on-resume", {Action::resume})};
  Fixture f(p);
  HookRecorder rec;
  with_hooks(f, rec);
  for (int i = 0; i < 4; ++i) f.sweep(true);
  settle(f, *f.responder);
  auto calls = rec.seen();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].argv, (std::vector<std::string>{"/usr/local/bin/ticket", "--node", "n2"}));
  EXPECT_TRUE(has(calls[0].env, "HEALTHD_ACTION=drain"));
  EXPECT_TRUE(has(calls[0].env, "HEALTHD_NODE=n2"));
  EXPECT_TRUE(has(calls[0].env, "HEALTHD_CODE=GPU-XID-79"));
  EXPECT_TRUE(has(calls[0].env, "HEALTHD_REASON=healthd: GPU-XID-79: fallen off the bus"));
  EXPECT_TRUE(f.journal.pending().empty());
}

TEST(Hooks, ARebootIsItsOwnActionAndAFailedRebootIsADrain) {
  PolicyConfig p;
  p.hooks = {hook("on-drain", {Action::drain}), hook("on-reboot", {Action::reboot})};
  Fixture f(p);
  HookRecorder rec;
  with_hooks(f, rec);
  for (int i = 0; i < 3; ++i) f.sweep(true, {{7, 0, true}}, Action::reboot);
  settle(f, *f.responder);
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  auto calls = rec.seen();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(has(calls[0].env, "HEALTHD_ACTION=reboot"));

  // No RebootProgram: the node is drained instead, and the hooks hear of a drain.
  Fixture g(p);
  g.slurm.reboot_program = false;
  HookRecorder drained;
  with_hooks(g, drained);
  for (int i = 0; i < 3; ++i) g.sweep(true, {{7, 0, true}}, Action::reboot);
  settle(g, *g.responder);
  auto seen = drained.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(has(seen[0].env, "HEALTHD_ACTION=drain"));
}

// A drain healthd did not carry out (an admin's was there first) runs no drain hook.
TEST(Hooks, NoHookForAnActionThatFoundNothingToDo) {
  PolicyConfig p;
  p.hooks = {hook("on-drain", {Action::drain})};
  Fixture f(p);
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE+DRAIN", "admin: DIMM", {"debug"}, true};
  HookRecorder rec;
  with_hooks(f, rec);
  for (int i = 0; i < 3; ++i) f.sweep(true);
  settle(f, *f.responder);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_TRUE(rec.seen().empty());
}

TEST(Hooks, ARequeueHookNamesTheJob) {
  PolicyConfig p;
  p.hooks = {hook("on-requeue", {Action::requeue})};
  Fixture f(p);
  HookRecorder rec;
  with_hooks(f, rec);
  for (int i = 0; i < 4; ++i) f.sweep(true);
  settle(f, *f.responder);
  ASSERT_EQ(f.slurm.count("requeue 7"), 1);
  auto calls = rec.seen();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(has(calls[0].env, "HEALTHD_ACTION=requeue"));
  EXPECT_TRUE(has(calls[0].env, "HEALTHD_JOB_ID=7"));
}

TEST(Hooks, AFailingHookIsRetriedThenGivenUpWithoutTouchingTheAction) {
  PolicyConfig p;
  p.hooks = {hook("pager", {Action::drain}, 2)};
  Fixture f(p);
  HookRecorder rec;
  rec.answer.exit_code = 3;
  rec.answer.err = "pager down";
  with_hooks(f, rec);
  for (int i = 0; i < 3; ++i) f.sweep(true);
  settle(f, *f.responder);
  EXPECT_EQ(rec.seen().size(), 2u);  // its attempts, then given up: no endless retries
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_TRUE(f.journal.pending().empty());
}

// A hook that has not answered yet does not hold the engine: the requeue goes on meanwhile.
TEST(Hooks, ASlowHookDoesNotHoldUpTheRequeue) {
  PolicyConfig p;
  p.hooks = {hook("slow", {Action::drain})};
  Fixture f(p);
  // Shared with the hook's thread, which may outlive a failed test.
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    void release() {
      {
        std::lock_guard lock(m);
        open = true;
      }
      cv.notify_all();
    }
  };
  auto gate = std::make_shared<Gate>();
  f.responder = std::make_unique<Responder>("n2", f.policy, f.slurm, f.journal, f.timeline, [gate](auto&, auto&, auto) {
    std::unique_lock lock(gate->m);
    gate->cv.wait_for(lock, 10s, [&] { return gate->open; });
    return std::expected<ProcessResult, std::string>(ProcessResult{0});
  });
  for (int i = 0; i < 4; ++i) f.sweep(true);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.jobs[7].state, "RUNNING");  // released and running again while the hook runs
  EXPECT_EQ(f.journal.pending().size(), 1u);
  EXPECT_TRUE(!f.journal.pending().empty() && f.journal.pending()[0].kind == Action::hook);
  gate->release();
  settle(f, *f.responder);
  EXPECT_TRUE(f.journal.pending().empty());
}

TEST(Hooks, AHookJournalledBeforeARestartRunsAfterIt) {
  PolicyConfig p;
  p.hooks = {hook("ticket", {Action::drain})};
  Fixture f(p);
  HookRecorder before;
  with_hooks(f, before);
  f.slurm.clock = f.now;
  f.responder->on_sweep({kernel_log_result(true)}, {}, std::nullopt, f.now);
  f.responder->run_due(f.now);  // the drain is done; its hook is journalled, not yet run
  EXPECT_TRUE(before.seen().empty());
  // The daemon is killed here; the next one reads the journal from disk.
  Journal reloaded(f.dir / "journal.json");
  ASSERT_TRUE(reloaded.load());
  ASSERT_EQ(reloaded.pending().size(), 1u);
  EXPECT_EQ(reloaded.pending()[0].kind, Action::hook);
  EXPECT_EQ(reloaded.pending()[0].done, Action::drain);
  HookRecorder after;
  Responder next("n2", f.policy, f.slurm, reloaded, f.timeline, after.runner());
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       !reloaded.pending().empty() && std::chrono::steady_clock::now() < deadline;) {
    next.run_due(f.now);
    f.now += 1s;
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(after.seen().size(), 1u);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
}

// The drain entry says whether it is held; a fault's message that holds the words healthd writes for
// a held drain must not keep the node out (it once did: the reason's text was searched).
TEST(Responder, AFaultMessageHoldingTheHeldWordsDoesNotHoldTheNode) {
  PolicyConfig p;
  p.recovery_passes = 2;
  Fixture f(p);
  f.slurm.clock = f.now;
  auto fault = kernel_log_result(true);
  fault.message = "x (3 faults within 3600 s: kept out until an admin resumes it)";
  f.responder->on_sweep({fault}, {}, std::nullopt, f.now);
  f.responder->run_due(f.now);
  ASSERT_EQ(f.slurm.count("drain n2"), 1);
  ASSERT_TRUE(f.journal.own_drain());
  EXPECT_FALSE(f.journal.own_drain()->held);
  for (int i = 0; i < 6; ++i) f.sweep(false, {});
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(Journal, AHeldDrainAndAHookEntryKeepTheirFieldsAcrossARestart) {
  ar::test::TempDir dir;
  Journal j(dir / "journal.json");
  JournalEntry drain;
  drain.kind = Action::drain;
  drain.node = "n2";
  drain.held = true;
  ASSERT_TRUE(j.add(drain));
  JournalEntry h;
  h.kind = Action::hook;
  h.node = "n2";
  h.hook = "ticket";
  h.done = Action::reboot;
  ASSERT_TRUE(j.add(h));
  Journal again(dir / "journal.json");
  ASSERT_TRUE(again.load());
  ASSERT_EQ(again.pending().size(), 2u);
  EXPECT_TRUE(again.pending()[0].held);
  EXPECT_EQ(again.pending()[1].hook, "ticket");
  EXPECT_EQ(again.pending()[1].done, Action::reboot);
}

// An annotate entry keeps its name in the file from before the one action vocabulary ("comment"),
// so a journal written by this version is read by the one before it, and the other way round.
TEST(Journal, AnAnnotateEntryKeepsItsOldNameInTheFile) {
  ar::test::TempDir dir;
  {
    Journal j(dir / "journal.json");
    JournalEntry e;
    e.kind = Action::annotate;
    e.job_id = 7;
    e.reason = "attempt 1 ended";
    ASSERT_TRUE(j.add(e));
  }
  std::ifstream in(dir / "journal.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"kind\":\"comment\""), std::string::npos) << text;
  Journal again(dir / "journal.json");
  ASSERT_TRUE(again.load());
  ASSERT_EQ(again.pending().size(), 1u);
  EXPECT_EQ(again.pending()[0].kind, Action::annotate);
}

// report_only set while a drain journalled before it waits for Slurm: the drain is finished (no
// half-done episode), but the admin's program is not run (review of issue 14).
TEST(Hooks, ReportOnlyFinishesAJournalledDrainButRunsNoHook) {
  PolicyConfig p;
  p.hooks = {hook("ticket", {Action::drain})};
  Fixture f(p);
  HookRecorder rec;
  with_hooks(f, rec);
  f.slurm.answering = false;
  f.sweep(true);
  p.report_only = true;
  p.check_interval = 1s;
  f.responder->set_policy(p);
  f.slurm.answering = true;
  for (int i = 0; i < 10; ++i) f.sweep(true);
  settle(f, *f.responder);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_TRUE(rec.seen().empty());
}

// ---- notices (vocabulary/notice.hpp) and admin actions through healthctl --------------------------

namespace {

struct RecordedNotices : NoticeSink {
  std::vector<Notice> seen;
  void notify(const Notice& n) noexcept override { seen.push_back(n); }
  int count(NoticeKind k) const {
    return static_cast<int>(std::count_if(seen.begin(), seen.end(), [&](const Notice& n) { return n.kind == k; }));
  }
  const Notice* first(NoticeKind k) const {
    for (const auto& n : seen)
      if (n.kind == k) return &n;
    return nullptr;
  }
};

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

// Whatever a check (or an admin's kernel-log rule capturing user text) puts in a fault, what reaches
// Slurm, the admin comment and the hooks is bounded in one place (issue 31).
TEST(Responder, AFaultsCodeAndMessageAreBoundedBeforeTheyLeaveTheDaemon) {
  Fixture f;
  CheckResult r = kernel_log_result(true);
  r.code = "X-$(id)\n`reboot`";
  r.message = "bad \xc2\x9b""31m text\n" + std::string(2000, 'y');
  f.slurm.clock = f.now;
  f.responder->on_sweep({r}, {{7, 0, true}}, std::nullopt, f.now);
  f.responder->run_due(f.now);
  const auto& reason = f.slurm.nodes["n2"].reason;
  EXPECT_EQ(reason.rfind("healthd: X-__id___reboot_: bad \\u009b31m text ", 0), 0u) << reason;
  EXPECT_LE(reason.size(), 240u);
  EXPECT_EQ(reason.find('\n'), std::string::npos);
  const auto& comment = f.slurm.jobs[7].admin_comment;
  EXPECT_NE(comment.find("X-__id___reboot_ on n2"), std::string::npos) << comment;
  EXPECT_EQ(comment.find("$(id)"), std::string::npos);
  EXPECT_EQ(comment.find("\xc2\x9b"), std::string::npos);
}
