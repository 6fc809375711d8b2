// The engine thread: how sweeps asked for from the event loop and the event sources' threads are
// queued and merged, and which jobs each judges.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
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
  SlurmResult<std::vector<NodeInfo>> node_table() override { return no(); }
  SlurmResult<JobInfo> job(std::uint32_t) override { return no(); }
  SlurmResult<void> drain(const std::string&, const std::string&) override { return no(); }
  SlurmResult<void> reboot(const std::string&, const std::string&) override { return no(); }
  SlurmResult<void> resume(const std::string&) override { return no(); }
  SlurmResult<void> set_reason(const std::string&, const std::string&) override { return no(); }
  SlurmResult<void> requeue(std::uint32_t) override { return no(); }
  SlurmResult<void> update_job(std::uint32_t, const JobUpdate&) override { return no(); }
  SlurmResult<void> cancel(std::uint32_t) override { return no(); }
  SlurmResult<void> signal_job(std::uint32_t, const std::string&) override { return no(); }
  SlurmResult<std::vector<StepInfo>> job_steps(std::uint32_t) override { return no(); }
  SlurmResult<void> kill_step(std::uint32_t, std::uint32_t) override { return no(); }
};

// A check that counts its runs; the first one waits until the test lets it go. `faulty`: every run
// finds an XID that drains the node.
class GatedCheck : public Check {
 public:
  explicit GatedCheck(bool faulty = false, bool open_at_start = false) : faulty_(faulty), open(open_at_start) {}
  std::string name() const override { return "gated"; }
  std::vector<CheckResult> run() override {
    std::unique_lock lock(m);
    ++runs;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    CheckResult r;
    r.check = name();
    r.devices.efa_ports = {{"rdmap0", "1", !faulty_}};
    if (faulty_) {
      r.status = Status::fault;
      r.code = "GPU-XID-79";
      r.message = "GPU has fallen off the bus";
      r.action = Remedy::drain;
    }
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
  bool faulty_;
  std::mutex m;
  std::condition_variable cv;
  bool open;
  int runs = 0;
};

// What an engine needs around it: a responder for node n1 with its journal and timeline in a
// temporary directory, and a Slurm it never needs.
struct EngineParts {
  ar::test::TempDir dir;
  UnusedSlurm slurm;
  Journal journal{dir / "journal.json"};
  Timeline timeline{dir / "timeline.json"};
  Responder responder{"n1", PolicyConfig{}, slurm, journal, timeline};

  // Whether the journal holds a requeue of `job_id` (read once the engine has stopped).
  bool requeue_journalled(std::uint32_t job_id) const {
    const auto& pending = journal.pending();
    return std::any_of(pending.begin(), pending.end(),
                       [&](const JournalEntry& e) { return e.kind == Action::requeue && e.job_id == job_id; });
  }
};

// Waits until the engine has done sweep `seq`, 10 s at most.
void wait_for_sweep(const Engine& engine, std::uint64_t seq) {
  for (int i = 0; i < 500 && engine.status().value("sweep_seq", std::uint64_t{0}) < seq; ++i) std::this_thread::sleep_for(20ms);
}

// An engine with one check that finds an XID, busy in its first sweep: what is asked for meanwhile
// waits for it.
struct BusyEngine {
  EngineParts parts;
  std::shared_ptr<GatedCheck> check = std::make_shared<GatedCheck>(true);
  Engine engine{{check}, parts.responder, 10s};
  BusyEngine() {
    engine.start();
    engine.request_sweep("periodic");
    check->wait_for_runs(1);
  }
  // Lets the first sweep end, waits for sweep `seq`, and stops the engine (its journal may be read then).
  void finish(std::uint64_t seq) {
    check->let_go();
    wait_for_sweep(engine, seq);
    engine.stop();
  }
};

}  // namespace

// Issue 10 item 14: each failed task of a 2,000-task step queued a sweep of its own.
TEST(Engine, FailuresOfOneJobAttemptWhileASweepRunsMakeOneMoreSweepNotThousands) {
  EngineParts parts;
  auto check = std::make_shared<GatedCheck>();
  Engine engine({check}, parts.responder, 10s);
  engine.start();
  engine.request_sweep("periodic");
  check->wait_for_runs(1);  // the engine is busy in this sweep
  std::uint64_t last = 0;
  engine.set_jobs({{7, 0, true}, {8, 0, true}});
  for (std::uint32_t task = 0; task < 2000; ++task)
    last = engine.request_sweep("job 7 step failed", StepFailure{7, 0, 0, task, 256, true});
  engine.request_sweep("job 8 step failed", StepFailure{8, 0, 0, 0, 256, true});
  check->let_go();
  for (int i = 0; i < 200 && engine.status().value("sweep_seq", std::uint64_t{0}) < last + 1; ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_GE(engine.status().value("sweep_seq", std::uint64_t{0}), last);
  engine.stop();
  // the periodic sweep, one for job 7's 2,000 failures, one for job 8
  EXPECT_EQ(check->run_count(), 3);
}

// An event source (the kernel-log watcher, NVML events) asks the engine from its own thread: the
// sweep judges the jobs of the engine's own view, which the event loop hands over, with no detour
// through the event loop.
TEST(Engine, AnEventFromAWatchersThreadJudgesTheJobsOfTheEnginesView) {
  EngineParts parts;
  auto check = std::make_shared<GatedCheck>(true, true);
  Engine engine({check}, parts.responder, 10s);
  engine.set_jobs({{7, 0, true}, {9, 0, false}});
  engine.start();
  std::uint64_t seq = 0;
  std::thread watcher([&] { seq = engine.request_sweep("kernel log event"); });
  watcher.join();
  wait_for_sweep(engine, seq);
  engine.stop();
  EXPECT_TRUE(parts.requeue_journalled(7));
  EXPECT_FALSE(parts.requeue_journalled(9));  // not an auto-resume job
}

// An XID kills the job's processes: the kernel-log watcher asks for a sweep, and the step's end
// reaches the event loop just after. The end, handed over before the engine gets to the sweep, must
// not take the job out of what that sweep judges, or the job the fault ended is not requeued.
TEST(Engine, ASweepJudgesTheJobsAsTheyWereWhenItWasAskedFor) {
  BusyEngine busy;
  busy.engine.set_jobs({{7, 0, true}});
  std::uint64_t seq = 0;
  std::thread watcher([&] { seq = busy.engine.request_sweep("kernel log event"); });
  watcher.join();
  busy.engine.set_jobs({});  // the step ended, the job left the node
  busy.finish(seq);
  EXPECT_TRUE(busy.parts.requeue_journalled(7));
}

// The same when a periodic sweep asked for meanwhile is merged into the event's: the merged sweep
// judges the jobs of both views.
TEST(Engine, AMergedSweepJudgesTheJobsOfBothViews) {
  BusyEngine busy;
  busy.engine.set_jobs({{7, 0, true}});
  busy.engine.request_sweep("kernel log event");
  busy.engine.set_jobs({{8, 0, true}});  // job 7's step ended; job 8 started
  busy.finish(busy.engine.request_sweep("periodic"));  // merged into the event's sweep
  EXPECT_EQ(busy.check->run_count(), 2);  // one sweep for both
  EXPECT_TRUE(busy.parts.requeue_journalled(7));
  EXPECT_TRUE(busy.parts.requeue_journalled(8));
}

// A timeline note handed to the engine just before it is stopped (a step failed as the daemon got
// SIGTERM) is recorded, not dropped with the stop.
TEST(Engine, ANoteHandedOverJustBeforeTheStopIsStillRecorded) {
  EngineParts parts;
  auto check = std::make_shared<GatedCheck>();
  Engine engine({check}, parts.responder, 10s);
  engine.start();
  engine.request_sweep("periodic");
  check->wait_for_runs(1);  // the engine is busy: the note and the stop both wait for it
  engine.note(7, {std::chrono::system_clock::now(), "n1", "step failed", "task 0: exit 1"});
  std::thread stopper([&] { engine.stop(); });
  std::this_thread::sleep_for(100ms);  // the stop is asked for before the sweep ends
  check->let_go();
  stopper.join();
  EXPECT_TRUE(parts.timeline.has_event(7, "step failed"));
}

namespace {
// A check that passes at once, counts its runs, and records whether it was started and what it
// took over from.
class NamedCheck : public Check {
 public:
  explicit NamedCheck(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<CheckResult> run() override {
    runs.fetch_add(1);
    CheckResult r;
    r.check = name_;
    return {r};
  }
  void carry_over(Check& previous) override { carried_from = &previous; }
  void start(JudgeNow) override { started.store(true); }
  std::atomic<int> runs{0};
  std::atomic<bool> started{false};
  Check* carried_from = nullptr;

 private:
  std::string name_;
};

std::uint64_t wait_for_sweep(Engine& engine, std::uint64_t seq) {
  for (int i = 0; i < 500 && engine.status().value("sweep_seq", std::uint64_t{0}) < seq; ++i) std::this_thread::sleep_for(10ms);
  return engine.status().value("sweep_seq", std::uint64_t{0});
}
}  // namespace

// A reload's new checks: started and fed from their old namesakes on the engine thread; a check
// still hung in an earlier sweep keeps its guard, so its new namesake does not run beside it.
TEST(Engine, ReplacedChecksTakeOverFromTheOldOnesAndAHungOneKeepsItsGuard) {
  EngineParts parts;
  auto gated = std::make_shared<GatedCheck>();
  auto plain = std::make_shared<NamedCheck>("plain");
  Engine engine({gated, plain}, parts.responder, 200ms);
  engine.start();
  auto seq = engine.request_sweep("periodic");
  gated->wait_for_runs(1);
  EXPECT_GE(wait_for_sweep(engine, seq), seq);  // the gated check is now hung past its deadline
  auto new_gated = std::make_shared<NamedCheck>("gated");
  auto new_plain = std::make_shared<NamedCheck>("plain");
  engine.replace_checks({new_gated, new_plain}, [](const std::string&) {});
  seq = engine.request_sweep("reload");
  EXPECT_GE(wait_for_sweep(engine, seq), seq);
  EXPECT_TRUE(new_plain->started);
  EXPECT_TRUE(new_gated->started);
  EXPECT_EQ(new_plain->carried_from, plain.get());
  EXPECT_EQ(new_gated->carried_from, nullptr);  // its old self is still running: nothing to take yet
  EXPECT_EQ(new_plain->runs.load(), 1);
  EXPECT_EQ(new_gated->runs.load(), 0);  // not run beside its hung old self
  const auto text = engine.status().dump();
  EXPECT_NE(text.find("still running past its deadline"), std::string::npos) << text;
  gated->let_go();
  std::this_thread::sleep_for(50ms);
  seq = engine.request_sweep("periodic", std::nullopt, true);
  EXPECT_GE(wait_for_sweep(engine, seq), seq);
  EXPECT_EQ(new_gated->runs.load(), 1);  // the old run returned: the new check runs
  engine.stop();
}

// The device lists (DeviceInventory) are the kinds' own: the engine builds each after a sweep into
// the status under its name, from that sweep's results, knowing none by name; their typed readings,
// then each result's own, go to the observers.
TEST(Engine, EachDeviceInventoryIsBuiltFromTheSweepsResultsIntoTheStatus) {
  EngineParts parts;
  auto check = std::make_shared<GatedCheck>();
  check->let_go();
  DeviceInventory widgets{"widgets", [](const std::vector<CheckResult>& results) {
                            DeviceList list;
                            for (const auto& r : results) {
                              list.listed.push_back({{"from", r.check}});
                              list.readings.neuron_devices.push_back({"widget-of-" + r.check, true});
                            }
                            return list;
                          }};
  Engine engine({check}, parts.responder, 10s, {widgets});
  std::mutex m;
  std::optional<NodeHealth> published;
  engine.on_status([&](const NodeHealth& health) {
    std::lock_guard lock(m);
    published = health;
  });
  engine.start();
  const auto seq = engine.request_sweep("periodic");
  for (int i = 0; i < 200 && engine.status().value("sweep_seq", std::uint64_t{0}) < seq; ++i) std::this_thread::sleep_for(20ms);
  const auto status = engine.status();
  engine.stop();
  ASSERT_TRUE(status.contains("widgets")) << status.dump();
  EXPECT_EQ(status["widgets"], nlohmann::json::parse(R"([{"from": "gated"}])"));
  std::lock_guard lock(m);
  ASSERT_TRUE(published.has_value());
  EXPECT_EQ(published->sweep_seq, seq);
  ASSERT_EQ(published->results.size(), 1u);
  EXPECT_EQ(published->results[0].check, "gated");
  EXPECT_EQ(published->devices.neuron_devices, (std::vector<NeuronReading>{{"widget-of-gated", true}}));
  EXPECT_EQ(published->devices.efa_ports, (std::vector<EfaPortReading>{{"rdmap0", "1", true}}));
  EXPECT_FALSE(status.contains("gpus"));  // no kind named here keeps GPUs
}

// What is decided from the published status (an admin's resume, the burn-in's gate) reads the node's
// standing, typed, handed to the observer and kept for Engine::standing().
TEST(Engine, TheNodesStandingIsPublishedTypedBesideTheStatus) {
  EngineParts parts;
  auto check = std::make_shared<GatedCheck>(true, true);
  Engine engine({check}, parts.responder, 10s);
  std::mutex m;
  std::vector<NodeStanding> seen;
  engine.on_status([&](const NodeHealth& health) {
    std::lock_guard lock(m);
    seen.push_back(health.standing);
  });
  EXPECT_FALSE(engine.standing().faulty);
  engine.start();
  wait_for_sweep(engine, engine.request_sweep("periodic"));
  engine.stop();
  const auto standing = engine.standing();
  EXPECT_TRUE(standing.faulty);
  EXPECT_EQ(standing.fault_code, "GPU-XID-79");
  // The status JSON of the socket says the same, written from the same facts.
  EXPECT_EQ(engine.status()["node"].value("faulty", false), true);
  EXPECT_EQ(engine.status()["node"].value("fault_code", ""), "GPU-XID-79");
  // The drain is journalled, not carried out (this Slurm never answers): healthd has not drained yet.
  EXPECT_FALSE(standing.own_drain);
  std::lock_guard lock(m);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), standing);
}
