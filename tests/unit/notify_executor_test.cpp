// notify_only end to end on one node: a check's finding calling for it (status warn, the node kept)
// journalled once per episode by the responder, carried out by actions/notify_executor.cpp as an
// incident notice, with the admin's hooks after it, while slurmctld is away too, and never a Slurm call.
#include <algorithm>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "engine/responder.hpp"
#include "responder_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace notify_executor_test {
namespace {

// The EFA check's counter finding, as `[checks.efa] counter_action = "notify_only"` makes it.
CheckResult efa_counter(bool found) {
  CheckResult r;
  r.check = "efa";
  if (found) {
    r.status = status_for(Remedy::notify_only);
    r.code = "EFA-COUNT";
    r.message = "rdmap16s27: retrans_timeout_events rose by 40 in 60 s";
    r.action = Remedy::notify_only;
  }
  return r;
}

void sweep(Fixture& f, bool found, bool full_pass = true) {
  f.responder->on_sweep({efa_counter(found)}, {{7, 0, true}}, std::nullopt, f.now, full_pass);
  f.responder->run_due(f.now);
  f.now += 1s;
}

}  // namespace

TEST(NotifyOnly, ItsStatusIsAWarningTheNodeStays) {
  EXPECT_EQ(status_for(Remedy::notify_only), Status::warn);
  EXPECT_TRUE(keeps_node_in(Remedy::notify_only));
  EXPECT_FALSE(takes_node_out(Remedy::notify_only));
}

TEST(NotifyOnly, TellsTheAdminsOncePerEpisodeAndTouchesNothingOnSlurm) {
  Fixture f;
  RecordedNotices told;
  f.responder->set_notices(&told, 3);
  for (int i = 0; i < 3; ++i) sweep(f, true);
  ASSERT_EQ(told.count(NoticeKind::incident), 1);
  const auto n = *told.first(NoticeKind::incident);
  EXPECT_EQ(n.node, "n2");
  EXPECT_EQ(n.code, "EFA-COUNT");
  EXPECT_EQ(n.message, "rdmap16s27: retrans_timeout_events rose by 40 in 60 s");
  EXPECT_EQ(n.action, "notify_only");
  EXPECT_TRUE(f.journal.pending().empty());
  // Neither drained nor requeued: not one call that changes Slurm.
  EXPECT_TRUE(f.slurm.calls.empty()) << f.slurm.calls.front();
  EXPECT_FALSE(f.slurm.nodes["n2"].drain);
  // Gone on a full pass, then back: a new episode, told again.
  sweep(f, false);
  sweep(f, true);
  EXPECT_EQ(told.count(NoticeKind::incident), 2);
}

TEST(NotifyOnly, APartialSweepWithoutItDoesNotEndTheEpisode) {
  Fixture f;
  RecordedNotices told;
  f.responder->set_notices(&told, 3);
  sweep(f, true);
  sweep(f, false, /*full_pass=*/false);
  sweep(f, true);
  EXPECT_EQ(told.count(NoticeKind::incident), 1);
}

TEST(NotifyOnly, IsToldWhileSlurmIsNotAnswering) {
  Fixture f;
  RecordedNotices told;
  f.responder->set_notices(&told, 3);
  f.slurm.answering = false;
  sweep(f, true);
  EXPECT_EQ(told.count(NoticeKind::incident), 1);
  EXPECT_TRUE(f.journal.pending().empty());
}

TEST(NotifyOnly, AJournalledNoticeIsToldAfterARestart) {
  Fixture f;
  // Journalled, and the daemon died before carrying it out.
  f.responder->on_sweep({efa_counter(true)}, {}, std::nullopt, f.now, true);
  ASSERT_EQ(f.journal.pending().size(), 1u);
  Journal reloaded(f.dir / "journal.json");
  ASSERT_TRUE(reloaded.load());
  ASSERT_EQ(reloaded.pending().size(), 1u);
  EXPECT_EQ(reloaded.pending().front().kind, Action::notify_only);
  Responder after("n2", f.policy, f.slurm, reloaded, f.timeline);
  RecordedNotices told;
  after.set_notices(&told, 3);
  after.run_due(f.now);
  ASSERT_EQ(told.count(NoticeKind::incident), 1);
  EXPECT_EQ(told.first(NoticeKind::incident)->code, "EFA-COUNT");
  EXPECT_TRUE(reloaded.pending().empty());
}

TEST(NotifyOnly, ReportOnlyTellsNothing) {
  PolicyConfig p;
  p.report_only = true;
  Fixture f(p);
  RecordedNotices told;
  f.responder->set_notices(&told, 3);
  sweep(f, true);
  EXPECT_EQ(told.count(NoticeKind::incident), 0);
  EXPECT_TRUE(f.journal.pending().empty());
}

TEST(NotifyOnly, TheAdminsHookOnItRuns) {
  PolicyConfig p;
  HookConfig h;
  h.name = "ticket";
  h.on = {Action::notify_only};
  h.command = {"/usr/local/bin/ticket", "%n"};
  p.hooks = {h};
  Fixture f(p);
  std::mutex mutex;
  std::vector<std::vector<std::string>> runs;
  f.responder = std::make_unique<Responder>(
      "n2", f.policy, f.slurm, f.journal, f.timeline,
      [&](const std::vector<std::string>& argv, const std::vector<std::string>&, std::chrono::milliseconds) {
        std::lock_guard lock(mutex);
        runs.push_back(argv);
        return std::expected<ProcessResult, std::string>(ProcessResult{0});
      });
  sweep(f, true);
  // The hook runs on a thread of its own: the journal is carried out until it is done.
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       !f.journal.pending().empty() && std::chrono::steady_clock::now() < deadline;) {
    f.responder->run_due(f.now);
    f.now += 1s;
    std::this_thread::sleep_for(2ms);
  }
  std::lock_guard lock(mutex);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs.front().front(), "/usr/local/bin/ticket");
}

}  // namespace notify_executor_test
