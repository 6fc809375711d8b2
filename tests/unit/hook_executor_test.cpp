// The admin's hooks ([[policy.hook]]) carried out (actions/hook_executor.cpp): after which actions they
// run, with what, retried and given up, never holding up a requeue, kept across a restart.
#include <condition_variable>
#include <fstream>
#include <future>
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
namespace hook_executor_test {

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

// A hook runs on a thread of its own; its end is an event (RunsEnded) that makes its entry due at once,
// not at the entry's next look (kRunningRecheck later): the hook's outcome is taken before then.
TEST(Hooks, AHooksEndMakesItsEntryDueAtOnceNotAtItsNextLook) {
  PolicyConfig p;
  p.hooks = {hook("ticket", {Action::drain})};
  Fixture f(p);
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  f.responder = std::make_unique<Responder>(
      "n2", f.policy, f.slurm, f.journal, f.timeline,
      [gate](const std::vector<std::string>&, const std::vector<std::string>&, std::chrono::milliseconds) {
        gate.wait();
        return std::expected<ProcessResult, std::string>(ProcessResult{0});
      });
  std::mutex m;
  std::condition_variable cv;
  bool ended = false;
  f.responder->actions().runs_ended().set_wake([&] {
    {
      std::lock_guard lock(m);
      ended = true;
    }
    cv.notify_all();
  });
  auto running_hook = [&]() -> std::optional<JournalEntry> {
    for (const auto& e : f.journal.pending())
      if (e.kind == Action::hook && e.last_error.find("running") != std::string::npos) return e;
    return std::nullopt;
  };
  for (int i = 0; i < 6 && !running_hook(); ++i) f.sweep(true);
  const auto hook_entry = running_hook();
  ASSERT_TRUE(hook_entry) << "the drain's hook never started";
  go.set_value();
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return ended; })) << "the hook's end was never posted";
  }
  // Before its next look: carried out all the same, and done.
  f.responder->run_due(hook_entry->next_try - 1ms);
  EXPECT_EQ(f.journal.find(hook_entry->id), nullptr);
  f.responder->actions().runs_ended().set_wake({});
}

TEST(Hooks, ARebootIsItsOwnActionAndAFailedRebootIsADrain) {
  PolicyConfig p;
  p.hooks = {hook("on-drain", {Action::drain}), hook("on-reboot", {Action::reboot})};
  Fixture f(p);
  HookRecorder rec;
  with_hooks(f, rec);
  for (int i = 0; i < 3; ++i) f.sweep(true, {{7, 0, true}}, Remedy::reboot);
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
  for (int i = 0; i < 3; ++i) g.sweep(true, {{7, 0, true}}, Remedy::reboot);
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

}  // namespace hook_executor_test
