// The cure chain's next move (policy/cure_policy.cpp) as a table: the chain's phase and step, what
// Slurm shows of the node, and whether the fault was found after the step, into the move.
#include <gtest/gtest.h>

#include "policy/cure_policy.hpp"

namespace ar::healthd::policy {
namespace cure_policy_test {

using Phase = CureProgress::Phase;

CureProgress chain_at(Phase phase, std::uint32_t step, std::string last = "") {
  CureProgress c;
  c.chain = {Action::reset_gpu, Action::reboot, Action::replace};
  c.step = step;
  c.phase = phase;
  c.last = std::move(last);
  return c;
}

// What Slurm shows: drained with nothing pending, a reboot pending, back in service, not answering;
// and a new boot (Slurm not asked then).
constexpr NodeSighting kDrained{.slurm_answered = true, .drained = true, .reboot_pending = false, .rebooted = false};
constexpr NodeSighting kRebootPending{.slurm_answered = true, .drained = true, .reboot_pending = true, .rebooted = false};
constexpr NodeSighting kInService{.slurm_answered = true, .drained = false, .reboot_pending = false, .rebooted = false};
constexpr NodeSighting kSilent{.slurm_answered = false, .drained = false, .reboot_pending = false, .rebooted = false};
constexpr NodeSighting kNewBoot{.slurm_answered = false, .drained = false, .reboot_pending = false, .rebooted = true};

struct Row {
  const char* what;
  CureProgress chain;
  NodeSighting node;
  bool after_step;
  CureMove move;
  std::string why;
};

TEST(CurePolicy, WhatAFaultFoundAgainDoesToTheChain) {
  const Row rows[] = {
      {"pending: its step runs", chain_at(Phase::pending, 0), kDrained, true, CureMove::run_step, ""},
      {"pending, Slurm silent: its step runs", chain_at(Phase::pending, 0), kSilent, false, CureMove::run_step, ""},
      {"back in service with no reboot of ours: the admin took over", chain_at(Phase::verifying, 0), kInService, true,
       CureMove::admin_took_over, ""},
      {"back in service after our reboot: not the admin's doing", chain_at(Phase::running, 1), kNewBoot, true,
       CureMove::next_step, "the fault is still there after the reboot"},
      {"a reset running with no entry (a restart lost it): runs again", chain_at(Phase::running, 0), kDrained, true,
       CureMove::run_step, ""},
      {"a reboot asked, still pending in Slurm: waits", chain_at(Phase::running, 1), kRebootPending, true, CureMove::stay, ""},
      {"a reboot asked, Slurm silent, same boot: waits", chain_at(Phase::running, 1), kSilent, true, CureMove::stay, ""},
      {"a reboot over (no longer pending), found after it: next", chain_at(Phase::running, 1), kDrained, true,
       CureMove::next_step, "the fault is still there after the reboot"},
      {"a reboot over, the result older than the step: waits", chain_at(Phase::running, 1), kDrained, false, CureMove::stay,
       ""},
      {"verifying, found after the step: it did not cure", chain_at(Phase::verifying, 0), kDrained, true, CureMove::next_step,
       "the fault was found again after it"},
      {"verifying, a result from before the step: waits", chain_at(Phase::verifying, 0), kDrained, false, CureMove::stay, ""},
      {"failed: the chain goes on, saying why", chain_at(Phase::failed, 0, "reset failed: busy"), kDrained, false,
       CureMove::next_step, "reset failed: busy"},
      {"exhausted: only an admin moves it", chain_at(Phase::exhausted, 3), kInService, true, CureMove::stay, ""},
      {"cannot run here: only an admin moves it", chain_at(Phase::cannot_run, 1), kInService, true, CureMove::stay, ""},
  };
  for (const auto& row : rows) {
    const auto d = when_fault_found(row.chain, row.node, row.after_step);
    EXPECT_EQ(d.move, row.move) << row.what;
    EXPECT_EQ(d.why, row.why) << row.what;
  }
}

TEST(CurePolicy, ARebootIsOverOnANewBootOrOnceSlurmNoLongerHoldsIt) {
  EXPECT_TRUE(reboot_over(kNewBoot));
  EXPECT_TRUE(reboot_over(kDrained));    // slurmd registered back, still drained
  EXPECT_TRUE(reboot_over(kInService));  // an admin resumed it
  EXPECT_FALSE(reboot_over(kRebootPending));
  EXPECT_FALSE(reboot_over(kSilent));
  // Pending but no longer drained: an admin resumed it and cancelled the reboot.
  EXPECT_TRUE(reboot_over({.slurm_answered = true, .drained = false, .reboot_pending = true, .rebooted = false}));
  EXPECT_TRUE(waiting_on_reboot(chain_at(Phase::running, 1)));
  EXPECT_FALSE(waiting_on_reboot(chain_at(Phase::running, 0)));
  EXPECT_FALSE(waiting_on_reboot(chain_at(Phase::verifying, 1)));
}

TEST(CurePolicy, AFailedStepHandsOverToTheNextOrExhaustsTheChain) {
  const WallTime now{std::chrono::seconds(7000)};
  auto next = after_failed_step(chain_at(Phase::failed, 0), "reset failed: busy", now);
  EXPECT_EQ(next.step, 1U);
  EXPECT_EQ(next.current(), Action::reboot);
  EXPECT_EQ(next.phase, Phase::pending);
  EXPECT_EQ(next.since, now);
  EXPECT_EQ(next.last, "reset_gpu: reset failed: busy");
  auto last = after_failed_step(chain_at(Phase::verifying, 2), "the fault was found again after it", now);
  EXPECT_EQ(last.phase, Phase::exhausted);
  EXPECT_TRUE(last.at_end());
  EXPECT_EQ(last.last, "replace: the fault was found again after it");
  EXPECT_TRUE(chain_stopped(last));
  EXPECT_FALSE(chain_stopped(next));
}

}  // namespace cure_policy_test
}  // namespace ar::healthd::policy
