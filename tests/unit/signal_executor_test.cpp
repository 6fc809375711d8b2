// A signal entry carried out (actions/signal_executor.cpp): a fault announced ahead (EC2 maintenance,
// spot) signals the auto-resume jobs to checkpoint, once per attempt, before the drain and requeue
// that follow the grace; a hardware fault meanwhile does not wait for it.
#include <gtest/gtest.h>

#include "engine/responder.hpp"
#include "responder_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

// A named namespace: unity builds put this file beside others with helpers of their own.
namespace signal_executor_test {

namespace {
CheckResult notice(std::chrono::seconds grace) {
  CheckResult r;
  r.check = "ec2";
  r.status = Status::fault;
  r.code = "EC2-SPOT-TERMINATE";
  r.message = "ec2: spot instance-action terminate at 2027-01-05T18:02:00Z";
  r.action = Remedy::drain;
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

TEST(Responder, TheCheckpointSignalsNoticeNamesTheJobsOwnerAsSlurmShowsIt) {
  Fixture f;
  RecordedNotices notices;
  f.responder->set_notices(&notices, 3);
  f.slurm.jobs[7].user_id = 1234;
  f.responder->on_sweep({notice(30s)}, {{7, 0, true}}, std::nullopt, f.now);
  f.responder->run_due(f.now);
  const Notice* signal = notices.first(NoticeKind::signal);
  ASSERT_NE(signal, nullptr);
  EXPECT_EQ(signal->job_id, 7u);
  EXPECT_EQ(signal->uid, std::optional<std::uint32_t>(1234));
  EXPECT_EQ(signal->message, "SIGUSR1 sent to checkpoint before EC2-SPOT-TERMINATE");
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

}  // namespace signal_executor_test
