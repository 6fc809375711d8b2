// A resume entry carried out (actions/resume_executor.cpp): healthd gives back its own drain after
// its healthy passes, never an admin's, and never while the reboot that cures the node is pending.
#include <gtest/gtest.h>

#include "engine/responder.hpp"
#include "responder_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace resume_executor_test {

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

TEST(Responder, ANodeWaitingForItsRebootIsNotResumedByHealthd) {
  PolicyConfig p;
  p.recovery_passes = 1;
  Fixture f(p);
  f.sweep(true, {{7, 0, true}}, Remedy::reboot);
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
  f.sweep(true, {{7, 0, true}}, Remedy::reboot);
  f.slurm.rebooted("n2");
  EXPECT_EQ(f.slurm.nodes["n2"].reason, "healthd: GPU-XID-79: fallen off the bus : reboot issued");
  for (int i = 0; i < 4 && f.slurm.count("resume n2") == 0; ++i) {
    EXPECT_TRUE(f.slurm.nodes["n2"].drain);
    f.sweep(false);
  }
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_FALSE(f.journal.own_drain().has_value());
}

}  // namespace resume_executor_test
