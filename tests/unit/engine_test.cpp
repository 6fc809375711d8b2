// The engine thread: how sweeps asked for from the event loop are queued and merged.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {

// A Slurm that is never needed: the node stays healthy, so the responder asks nothing of it.
class UnusedSlurm : public SlurmClient {
  std::unexpected<SlurmError> no() { return std::unexpected(SlurmError("unused")); }

 public:
  SlurmResult<NodeInfo> node(const std::string&) override { return no(); }
  SlurmResult<std::vector<NodeInfo>> partition_nodes(const std::string&) override { return no(); }
  SlurmResult<JobInfo> job(std::uint32_t) override { return no(); }
  SlurmResult<void> drain(const std::string&, const std::string&) override { return no(); }
  SlurmResult<void> reboot(const std::string&, const std::string&) override { return no(); }
  SlurmResult<void> resume(const std::string&) override { return no(); }
  SlurmResult<void> set_reason(const std::string&, const std::string&) override { return no(); }
  SlurmResult<void> requeue(std::uint32_t) override { return no(); }
  SlurmResult<void> update_job(std::uint32_t, const JobUpdate&) override { return no(); }
  SlurmResult<void> cancel(std::uint32_t) override { return no(); }
  SlurmResult<void> signal_job(std::uint32_t, const std::string&) override { return no(); }
};

// A check that counts its runs; the first one waits until the test lets it go.
class GatedCheck : public Check {
 public:
  std::string name() const override { return "gated"; }
  std::vector<CheckResult> run() override {
    std::unique_lock lock(m);
    ++runs;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    CheckResult r;
    r.check = name();
    return {r};
  }
  void let_go() {
    std::lock_guard lock(m);
    open = true;
    cv.notify_all();
  }
  void wait_for_runs(int n) {
    std::unique_lock lock(m);
    cv.wait_for(lock, 10s, [&] { return runs >= n; });
  }
  int run_count() {
    std::lock_guard lock(m);
    return runs;
  }

 private:
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  int runs = 0;
};

}  // namespace

// Issue 10 item 14: each failed task of a 2,000-task step queued a sweep of its own.
TEST(Engine, FailuresOfOneJobAttemptWhileASweepRunsMakeOneMoreSweepNotThousands) {
  ar::test::TempDir dir;
  UnusedSlurm slurm;
  Journal journal(dir / "journal.json");
  Timeline timeline(dir / "timeline.json");
  Responder responder("n1", PolicyConfig{}, slurm, journal, timeline);
  auto check = std::make_shared<GatedCheck>();
  Engine engine({check}, responder, 10s);
  engine.start();
  engine.request_sweep("periodic", {});
  check->wait_for_runs(1);  // the engine is busy in this sweep
  std::uint64_t last = 0;
  for (std::uint32_t task = 0; task < 2000; ++task)
    last = engine.request_sweep("job 7 step failed", {{7, 0, true}}, StepFailure{7, 0, 0, task, 256, true});
  engine.request_sweep("job 8 step failed", {{8, 0, true}}, StepFailure{8, 0, 0, 0, 256, true});
  check->let_go();
  for (int i = 0; i < 200 && engine.status().value("sweep_seq", std::uint64_t{0}) < last + 1; ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_GE(engine.status().value("sweep_seq", std::uint64_t{0}), last);
  engine.stop();
  // the periodic sweep, one for job 7's 2,000 failures, one for job 8
  EXPECT_EQ(check->run_count(), 3);
}

// A timeline note handed to the engine just before it is stopped (a step failed as the daemon got
// SIGTERM) is recorded, not dropped with the stop.
TEST(Engine, ANoteHandedOverJustBeforeTheStopIsStillRecorded) {
  ar::test::TempDir dir;
  UnusedSlurm slurm;
  Journal journal(dir / "journal.json");
  Timeline timeline(dir / "timeline.json");
  Responder responder("n1", PolicyConfig{}, slurm, journal, timeline);
  auto check = std::make_shared<GatedCheck>();
  Engine engine({check}, responder, 10s);
  engine.start();
  engine.request_sweep("periodic", {});
  check->wait_for_runs(1);  // the engine is busy: the note and the stop both wait for it
  engine.note(7, {std::chrono::system_clock::now(), "n1", "step failed", "task 0: exit 1"});
  std::thread stopper([&] { engine.stop(); });
  std::this_thread::sleep_for(100ms);  // the stop is asked for before the sweep ends
  check->let_go();
  stopper.join();
  EXPECT_TRUE(timeline.has_event(7, "step failed"));
}
