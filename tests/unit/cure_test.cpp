// Cure chains: which chain a fault gets, and how healthd walks it against a recording Slurm: a GPU
// reset that cures, one that does not, one that fails or is blocked, a reboot that did not cure, the
// replacement, a deep check before the node returns, and a daemon killed in the middle of a step; a
// step whose means are missing here (no reset tool, no RebootProgram, no replace hook) holds the node
// for an admin instead of escalating (issue 31), and a reboot comes back drained for healthd to return.
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "config/config.hpp"
#include "daemon.hpp"
#include "policy/cure_plan.hpp"
#include "policy/fault_policy.hpp"
#include "responder_fixture.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace {

using enum Action;

CheckResult fault(const std::string& code, Remedy action, std::vector<std::string> gpus = {"00000000:3B:00.0"}) {
  CheckResult r;
  r.check = "gpu";
  r.status = Status::fault;
  r.code = code;
  r.message = "on GPU 0";
  r.action = action;
  r.gpus = std::move(gpus);
  r.xid = policy::xid_of_code(code);  // as the XID check's results carry it
  return r;
}

// Stands in for the GPU reset and the deep check's process runner; both answer from their own threads.
struct Doctor {
  std::mutex mutex;
  std::vector<std::vector<std::string>> resets;  // the GPUs of each reset
  std::vector<GpuResetOutcome> reset_answers;    // in turn; the last one repeats
  std::vector<std::vector<std::string>> deep_checks;
  ProcessResult deep_answer{0};
  std::vector<std::string> forgotten;  // codes the checks were asked to forget

  GpuResetter resetter() {
    return [this](const CureConfig&, const std::vector<std::string>& gpus, const std::string&) {
      std::lock_guard lock(mutex);
      resets.push_back(gpus);
      const auto i = std::min(resets.size(), reset_answers.size()) - 1;
      return reset_answers.at(i);
    };
  }
  HookRunner runner() {
    return [this](const std::vector<std::string>& argv, const std::vector<std::string>&, std::chrono::milliseconds) {
      std::lock_guard lock(mutex);
      deep_checks.push_back(argv);
      return std::expected<ProcessResult, std::string>(deep_answer);
    };
  }
  std::size_t reset_count() {
    std::lock_guard lock(mutex);
    return resets.size();
  }
};

struct CureFixture : Fixture {
  Doctor doctor;
  CheckResult current;
  // A step's thread posts its end (RunsEnded): settle() waits for that rather than polling.
  std::mutex ended_mutex;
  std::condition_variable ended_cv;
  bool run_ended = false;

  explicit CureFixture(PolicyConfig p = {}, std::string boot = "boot-1") : Fixture(p) {
    doctor.reset_answers = {{GpuResetOutcome::Kind::reset, "GPU 00000000:3B:00.0 reset"}};
    rebuild(std::move(boot));
  }
  ~CureFixture() {
    if (responder) responder->actions().runs_ended().set_wake({});
  }
  // `real_reset`: GPUs are reset by reset_gpus itself ([cure] reset_command), not the doctor.
  void rebuild(std::string boot, bool real_reset = false) {
    if (responder) responder->actions().runs_ended().set_wake({});
    responder = std::make_unique<Responder>("n2", policy, slurm, journal, timeline, doctor.runner());
    responder->actions().runs_ended().set_wake([this] {
      {
        std::lock_guard lock(ended_mutex);
        run_ended = true;
      }
      ended_cv.notify_all();
    });
    responder->set_cure(real_reset ? GpuResetter{} : doctor.resetter(),
                        [this](const std::string& code) { doctor.forgotten.push_back(code); }, std::move(boot));
  }
  // The hooks that ran (through the same runner as the deep check), by their program.
  std::size_t ran(const std::string& program) {
    std::lock_guard lock(doctor.mutex);
    return static_cast<std::size_t>(std::count_if(doctor.deep_checks.begin(), doctor.deep_checks.end(),
                                                   [&](const auto& argv) { return argv.front() == program; }));
  }
  // One sweep with `r` (or healthy), then the journal carried out until nothing is due that can be
  // done now (a step's thread answers in its own time).
  void sweep_with(const std::optional<CheckResult>& r, std::vector<LocalJob> jobs = {}) {
    slurm.clock = now;
    CheckResult healthy;
    healthy.check = "gpu";
    CheckResult seen = r.value_or(healthy);
    seen.at = now;
    responder->on_sweep({seen}, jobs, std::nullopt, now);
    settle();
    now += 1s;
  }
  // Carries out what is due; a step answering from its thread is waited for (its end is posted; 5 s
  // at most), a step that waits longer (for jobs, for a blocked GPU) is left for a later sweep.
  void settle() {
    for (auto deadline = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < deadline;) {
      responder->run_due(now);
      responder->follow_requeued(now);
      if (auto due = journal.next_due(); due && *due <= now + 1s) {
        now += 250ms;
        std::this_thread::sleep_for(1ms);
        continue;
      }
      if (!responder->actions().runs_going()) break;
      std::unique_lock lock(ended_mutex);
      ended_cv.wait_until(lock, deadline, [&] { return run_ended; });
      run_ended = false;
    }
  }
  std::string reason() { return slurm.nodes["n2"].reason; }
  nlohmann::json cure_status() { return responder->status()["own_drain"]["cure"]; }
};

}  // namespace

TEST(CurePlan, TheCataloguesDefaults) {
  CureConfig none;
  EXPECT_EQ(policy::cure_chain(none, fault("GPU-XID-48", Remedy::reset_gpu), false), (std::vector<Action>{reset_gpu, reboot, replace}));
  EXPECT_EQ(policy::cure_chain(none, fault("GPU-XID-79", Remedy::reboot), false), (std::vector<Action>{reboot, replace}));
  EXPECT_EQ(policy::cure_chain(none, fault("GPU-ROW-REMAP-FAILED", Remedy::drain), false), (std::vector<Action>{replace}));
  // By code, whatever action the memory check was set to.
  EXPECT_EQ(policy::cure_chain(none, fault("GPU-ROW-REMAP-PENDING", Remedy::drain), false), (std::vector<Action>{reset_gpu, reboot, replace}));
  EXPECT_EQ(policy::cure_chain(none, fault("NEURON-HW-ERR", Remedy::drain), false), (std::vector<Action>{replace}));
  EXPECT_EQ(policy::cure_chain(none, fault("NEURON-HW-ERR", Remedy::reboot), false), (std::vector<Action>{reboot, replace}));
  EXPECT_TRUE(policy::cure_chain(none, fault("KMSG-MCE", Remedy::drain), false).empty());
  // A node held for flapping is not cured by one more reset.
  EXPECT_EQ(policy::cure_chain(none, fault("GPU-XID-48", Remedy::reset_gpu), true), (std::vector<Action>{replace}));
}

// A new episode's drain entry, as a table: the fault and whether the node is held, into the entry's
// reboot, chain and the jobs its timeline lines go to.
TEST(CurePlan, ANewEpisodesDrainCarriesItsCure) {
  struct Row {
    const char* what;
    CheckResult fault;
    bool held;
    bool reboot;
    std::vector<Action> chain;
  };
  const Row rows[] = {
      {"only a reboot cures it: the drain is the reboot", fault("GPU-XID-79", Remedy::reboot), false, true, {reboot, replace}},
      {"a reset first: drained, the reset follows", fault("GPU-XID-48", Remedy::reset_gpu), false, false, {reset_gpu, reboot, replace}},
      {"held for flapping: never rebooted behind the admin's back", fault("GPU-XID-79", Remedy::reboot), true, false, {replace}},
      {"no chain: drain only", fault("KMSG-MCE", Remedy::drain), false, false, {}},
  };
  const WallTime now{std::chrono::seconds(5000)};
  for (const auto& row : rows) {
    const auto e = policy::episode_drain(CureConfig{}, row.fault, row.held, "healthd: X: y", {7, 8, 7}, "n2", now);
    EXPECT_EQ(e.kind, drain) << row.what;
    EXPECT_EQ(e.node, "n2") << row.what;
    EXPECT_EQ(e.code, row.fault.code) << row.what;
    EXPECT_EQ(e.reason, "healthd: X: y") << row.what;
    EXPECT_EQ(e.held, row.held) << row.what;
    EXPECT_EQ(e.reboot, row.reboot) << row.what;
    EXPECT_EQ(e.next_try, now) << row.what;
    ASSERT_TRUE(e.cure) << row.what;
    EXPECT_EQ(e.cure->chain, row.chain) << row.what;
    EXPECT_EQ(e.cure->gpus, row.fault.gpus) << row.what;
    EXPECT_EQ(e.cure->jobs, (std::vector<std::uint32_t>{7, 8})) << row.what;  // each once
  }
  std::vector<std::uint32_t> many(100);
  std::iota(many.begin(), many.end(), 1u);
  EXPECT_EQ(policy::episode_drain(CureConfig{}, fault("GPU-XID-79", Remedy::reboot), false, "r", many, "n2", now).cure->jobs.size(), 64u);
}

TEST(CurePlan, TheAdminsChainByCodeWinsThenByXid) {
  CureConfig c;
  c.chains = {{"", 48u, {reboot}, ""}, {"GPU-XID-48", std::nullopt, {replace}, ""}, {"", 79u, {}, ""}};
  EXPECT_EQ(policy::cure_chain(c, fault("GPU-XID-48", Remedy::reset_gpu), false), (std::vector<Action>{replace}));
  EXPECT_TRUE(policy::cure_chain(c, fault("GPU-XID-79", Remedy::reboot), false).empty());  // drain only, as the admin says
  // The XID is the result's, not read out of its code: an admin's kernel-log rule that names its
  // code like an XID's is no XID.
  auto named_like_one = fault("GPU-XID-79", Remedy::reboot);
  named_like_one.xid.reset();
  EXPECT_EQ(policy::cure_chain(c, named_like_one, false), (std::vector<Action>{reboot, replace}));
  EXPECT_FALSE(policy::xid_of_code("GPU-XID-").has_value());
  EXPECT_FALSE(policy::xid_of_code("GPU-XID-4x").has_value());
  EXPECT_EQ(policy::xid_of_code("GPU-XID-119"), 119u);
}

TEST(Cure, AResetThatCuresReturnsTheNode) {
  CureFixture f;
  const auto xid = fault("GPU-XID-48", Remedy::reset_gpu, {"0000:3b:00"});
  f.sweep_with(xid, {{7, 0, true}});
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.doctor.reset_count(), 0u);  // job 7 still runs here
  f.sweep_with(xid);                      // it left: the GPU is reset
  ASSERT_EQ(f.doctor.reset_count(), 1u);
  EXPECT_EQ(f.doctor.resets[0], (std::vector<std::string>{"0000:3b:00"}));
  // The checks forget the XID, which was about the GPU before its reset.
  EXPECT_EQ(f.doctor.forgotten, (std::vector<std::string>{"GPU-XID-48"}));
  EXPECT_EQ(f.cure_status()["phase"], "verifying");
  // The job the fault ended sees what became of the node.
  EXPECT_TRUE(f.timeline.has_event(7, "node cure"));
  for (int i = 0; i < 5; ++i) f.sweep_with(std::nullopt);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_EQ(f.slurm.count("reboot n2"), 0);
  EXPECT_EQ(f.doctor.reset_count(), 1u);
}

TEST(Cure, AResetThatDoesNotCureGoesOnToAReboot) {
  CureFixture f;
  const auto remap = fault("GPU-ROW-REMAP-PENDING", Remedy::drain);
  f.sweep_with(remap);
  ASSERT_EQ(f.doctor.reset_count(), 1u);
  EXPECT_EQ(f.slurm.count("reboot n2"), 0);
  f.sweep_with(remap);  // found again after the reset
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_EQ(f.doctor.reset_count(), 1u);
  EXPECT_EQ(f.cure_status()["step"], "reboot");
  EXPECT_EQ(f.cure_status()["phase"], "running");
  // While the reboot is pending the fault is still there: nothing more happens.
  f.sweep_with(remap);
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_EQ(f.responder->status()["own_drain"]["held"], false);
}

TEST(Cure, AFaultStillThereAfterTheRebootRequestsAReplacement) {
  PolicyConfig p;
  p.hooks = {{"replace-it", {replace}, {"/usr/local/bin/replace", "%n"}, 30s, 3, ""}};
  CureFixture f(p);
  const auto lost = fault("GPU-LOST", Remedy::reboot);
  f.sweep_with(lost);
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  // The node comes back from its reboot (a new boot, still drained) with the same fault.
  f.slurm.rebooted("n2");
  f.rebuild("boot-2");
  f.sweep_with(lost);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);  // never back in service, so never drained again
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_EQ(f.reason(), "healthd: GPU-LOST: on GPU 0 (replacement requested)");
  EXPECT_EQ(f.responder->status()["own_drain"]["held"], true);
  ASSERT_EQ(f.doctor.deep_checks.size(), 1u);  // the replace hook, through the same runner
  EXPECT_EQ(f.doctor.deep_checks[0], (std::vector<std::string>{"/usr/local/bin/replace", "n2"}));
  // Held: healthy sweeps never return it.
  for (int i = 0; i < 5; ++i) f.sweep_with(std::nullopt);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
}

// Issue 31: with no reset tool on the node (nvidia-smi not found when the config was loaded), a
// pending row remap went reset (not found) -> reboot -> "replacement requested" in 0.3 s, and the
// replace hook ran. The reset did not run: the node is held, saying what it needs.
TEST(Cure, NoResetToolHoldsTheNodeSayingSoAndNeverEscalates) {
  PolicyConfig p;
  p.hooks = {{"replace-it", {replace}, {"/usr/local/bin/replace", "%n"}, 30s, 3, ""}};
  ASSERT_EQ(p.cure.reset_command.front(), "nvidia-smi");  // as loaded where no nvidia-smi was found
  CureFixture f(p);
  f.rebuild("boot-1", /*real_reset=*/true);
  const auto remap = fault("GPU-ROW-REMAP-PENDING", Remedy::drain);
  f.sweep_with(remap);
  EXPECT_EQ(f.reason(), "healthd: GPU-ROW-REMAP-PENDING: on GPU 0 (needs a GPU reset: no reset command; set [cure] reset_command)");
  EXPECT_EQ(f.cure_status()["phase"], "cannot_run");
  EXPECT_EQ(f.cure_status()["step"], "reset_gpu");
  EXPECT_NE(f.cure_status()["last"].get<std::string>().find("was not found"), std::string::npos);
  EXPECT_EQ(f.responder->status()["own_drain"]["held"], true);
  // The fault found again changes nothing: no reboot, no replacement, no replace hook.
  for (int i = 0; i < 3; ++i) f.sweep_with(remap);
  EXPECT_EQ(f.slurm.count("reboot n2"), 0);
  EXPECT_EQ(f.reason().find("replacement requested"), std::string::npos);
  EXPECT_EQ(f.ran("/usr/local/bin/replace"), 0u);
  // Held for an admin: healthy sweeps do not return it.
  for (int i = 0; i < 5; ++i) f.sweep_with(std::nullopt);
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_TRUE(f.slurm.nodes["n2"].drain);
}

// The rest of issue 31's chain: a reset that ran and failed hands over to a reboot, and Slurm cannot
// reboot (no RebootProgram): that is not a reboot that failed, so no replacement follows.
TEST(Cure, NoRebootProgramHoldsTheNodeSayingSoAndNeverEscalates) {
  PolicyConfig p;
  p.hooks = {{"replace-it", {replace}, {"/usr/local/bin/replace", "%n"}, 30s, 3, ""}};
  CureFixture f(p);
  f.slurm.reboot_program = false;
  f.doctor.reset_answers = {{GpuResetOutcome::Kind::failed, "GPU 00000000:3B:00.0: reset failed (exit 3)"}};
  const auto remap = fault("GPU-ROW-REMAP-PENDING", Remedy::drain);
  f.sweep_with(remap);
  EXPECT_EQ(f.doctor.reset_count(), 1u);
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_EQ(f.reason(), "healthd: GPU-ROW-REMAP-PENDING: on GPU 0 (needs a reboot: slurm.conf has no RebootProgram)");
  EXPECT_EQ(f.cure_status()["phase"], "cannot_run");
  EXPECT_EQ(f.cure_status()["step"], "reboot");
  EXPECT_EQ(f.responder->status()["own_drain"]["held"], true);
  for (int i = 0; i < 3; ++i) f.sweep_with(remap);
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_EQ(f.ran("/usr/local/bin/replace"), 0u);
  EXPECT_EQ(f.reason().find("replacement requested"), std::string::npos);
}

// A fault whose first step is the reboot: the drain itself says what the node needs.
TEST(Cure, NoRebootProgramForAFirstStepRebootDrainsSayingWhatItNeeds) {
  PolicyConfig p;
  p.hooks = {{"replace-it", {replace}, {"/usr/local/bin/replace", "%n"}, 30s, 3, ""}};
  CureFixture f(p);
  f.slurm.reboot_program = false;
  const auto lost = fault("GPU-LOST", Remedy::reboot);
  for (int i = 0; i < 3; ++i) f.sweep_with(lost);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.reason(), "healthd: GPU-LOST: on GPU 0 (needs a reboot: slurm.conf has no RebootProgram)");
  EXPECT_EQ(f.cure_status()["phase"], "cannot_run");
  EXPECT_EQ(f.ran("/usr/local/bin/replace"), 0u);
}

// Without a replace hook nothing would ask for the new hardware: held for an admin, saying so.
TEST(Cure, NoReplaceHookHoldsTheNodeSayingSo) {
  PolicyConfig p;
  p.cure.chains = {{"", 48u, {reset_gpu, replace}, ""}};
  CureFixture f(p);
  f.doctor.reset_answers = {{GpuResetOutcome::Kind::failed, "GPU 00000000:3B:00.0: reset failed (exit 255)"}};
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.reason(), "healthd: GPU-XID-48: on GPU 0 (needs replacing: no replace hook; add a [[policy.hook]] on replace)");
  EXPECT_EQ(f.cure_status()["phase"], "cannot_run");
  EXPECT_EQ(f.cure_status()["step"], "replace");
  EXPECT_EQ(f.responder->status()["own_drain"]["held"], true);
}

// The reason's bound holds with what the node needs at its end, and an earlier ending is replaced.
TEST(Cure, AReasonSayingWhatTheNodeNeedsStaysWithinItsBound) {
  const std::string needs = "needs a reboot: slurm.conf has no RebootProgram";
  const auto r = reason_needing("healthd: X: " + std::string(400, 'a'), needs);
  EXPECT_LE(r.size(), 240u);
  EXPECT_TRUE(r.ends_with("(" + needs + ")"));
  EXPECT_EQ(reason_needing("healthd: X: y (reboot needed)", needs), "healthd: X: y (" + needs + ")");
  EXPECT_EQ(reason_needing("healthd: X: y (needs a GPU reset: no reset command; set [cure] reset_command)", needs),
            "healthd: X: y (" + needs + ")");
}

// Issue 31: after a reboot that did not cure, Slurm returned the node to service (nextstate=RESUME)
// and healthd drained it again 1.7 s later. It comes back drained now, and healthd returns it once
// healthy; never in service in between.
TEST(Cure, ARebootComesBackDrainedAndHealthdReturnsItOnceHealthy) {
  CureFixture f;
  const auto lost = fault("GPU-LOST", Remedy::reboot);
  f.sweep_with(lost);
  ASSERT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_TRUE(f.slurm.nodes["n2"].drain);
  f.slurm.rebooted("n2");
  f.rebuild("boot-2");
  // Healthy after its reboot: healthd's own drain, returned after the recovery passes.
  for (int i = 0; i < 6 && f.slurm.count("resume n2") == 0; ++i) {
    EXPECT_TRUE(f.slurm.nodes["n2"].drain) << "in service before healthd judged it, sweep " << i;
    f.sweep_with(std::nullopt);
  }
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
  EXPECT_FALSE(f.journal.own_drain().has_value());
}

// Back drained from its reboot, the node gets the deep check before it returns, as after a reset
// (before, Slurm returned it itself and no deep check could stand between).
TEST(Cure, ARebootedNodeGetsTheDeepCheckBeforeItReturns) {
  PolicyConfig p;
  p.cure.deep_check = {"/usr/bin/dcgmi", "diag", "-r", "3"};
  CureFixture f(p);
  f.sweep_with(fault("GPU-LOST", Remedy::reboot));
  ASSERT_EQ(f.slurm.count("reboot n2"), 1);
  f.slurm.rebooted("n2");
  f.rebuild("boot-2");
  for (int i = 0; i < 8 && f.slurm.count("resume n2") == 0; ++i) f.sweep_with(std::nullopt);
  EXPECT_EQ(f.ran("/usr/bin/dcgmi"), 1u);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(Cure, AResetThatFailsGoesToTheNextStepAtOnce) {
  PolicyConfig p;
  p.cure.chains = {{"", 48u, {reset_gpu, replace}, ""}};
  p.hooks = {{"replace-it", {replace}, {"/usr/local/bin/replace", "%n"}, 30s, 3, ""}};
  CureFixture f(p);
  f.doctor.reset_answers = {{GpuResetOutcome::Kind::failed, "GPU 00000000:3B:00.0: reset failed (exit 255)"}};
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.doctor.reset_count(), 1u);
  EXPECT_EQ(f.reason(), "healthd: GPU-XID-48: on GPU 0 (replacement requested)");
  EXPECT_EQ(f.cure_status()["phase"], "exhausted");
  EXPECT_TRUE(f.doctor.forgotten.empty());
}

TEST(Cure, ABlockedResetWaitsThenGivesUp) {
  PolicyConfig p;
  p.cure.chains = {{"", 48u, {reset_gpu}, ""}};
  p.cure.reset_wait = 20s;
  CureFixture f(p);
  f.doctor.reset_answers = {{GpuResetOutcome::Kind::blocked, "GPU 00000000:3B:00.0 is used by process(es) 4242"}};
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.cure_status()["phase"], "running");
  EXPECT_NE(f.cure_status()["last"].get<std::string>().find("4242"), std::string::npos);
  for (int i = 0; i < 30 && f.cure_status()["phase"] == "running"; ++i) f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_GT(f.doctor.reset_count(), 1u);  // asked again while it waited
  // The only step failed: nothing is left, the node stays out for an admin.
  EXPECT_EQ(f.cure_status()["phase"], "exhausted");
  EXPECT_EQ(f.responder->status()["own_drain"]["held"], true);
}

TEST(Cure, AResetWaitsForTheNodesJobsToLeave) {
  CureFixture f;
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu), {{8, 0, false}});  // not auto-resume: it ends by itself
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu), {{8, 0, false}});
  EXPECT_EQ(f.doctor.reset_count(), 0u);
  EXPECT_NE(f.cure_status()["last"].get<std::string>().find("waiting for the node's jobs"), std::string::npos);
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.doctor.reset_count(), 1u);
}

TEST(Cure, ADaemonKilledDuringAResetResetsAgainAfterItsRestart) {
  CureFixture f;
  f.doctor.reset_answers = {{GpuResetOutcome::Kind::reset, "reset"}};
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu), {{8, 0, false}});  // the reset is journalled, waiting
  ASSERT_EQ(f.doctor.reset_count(), 0u);
  // Killed here: a new daemon reads the journal.
  Journal reloaded(f.dir / "journal.json");
  ASSERT_TRUE(reloaded.load());
  ASSERT_TRUE(reloaded.own_drain());
  ASSERT_TRUE(reloaded.own_drain()->cure);
  EXPECT_EQ(reloaded.own_drain()->cure->current(), reset_gpu);
  Responder next("n2", f.policy, f.slurm, reloaded, f.timeline, f.doctor.runner());
  next.set_cure(f.doctor.resetter(), [](const std::string&) {}, "boot-1");
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       f.doctor.reset_count() == 0 && std::chrono::steady_clock::now() < deadline;) {
    next.run_due(f.now);
    f.now += 1s;
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(f.doctor.reset_count(), 1u);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
}

TEST(Cure, ADeepCheckStandsBetweenTheCureAndTheReturn) {
  PolicyConfig p;
  p.cure.deep_check = {"/usr/bin/dcgmi", "diag", "-r", "3"};
  CureFixture f(p);
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  for (int i = 0; i < 5; ++i) f.sweep_with(std::nullopt);
  ASSERT_EQ(f.doctor.deep_checks.size(), 1u);
  EXPECT_EQ(f.doctor.deep_checks[0], p.cure.deep_check);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(Cure, AFailedDeepCheckKeepsTheNodeOutWithItsMessage) {
  PolicyConfig p;
  p.cure.deep_check = {"/usr/local/bin/nccl-allreduce", "%n"};
  CureFixture f(p);
  f.doctor.deep_answer = ProcessResult{1, false, false, false, "busbw 12.5 GB/s below 180\nmore\n", ""};
  f.sweep_with(fault("KMSG-MCE", Remedy::drain, {}));
  for (int i = 0; i < 8; ++i) f.sweep_with(std::nullopt);
  ASSERT_EQ(f.doctor.deep_checks.size(), 1u);
  EXPECT_EQ(f.doctor.deep_checks[0], (std::vector<std::string>{"/usr/local/bin/nccl-allreduce", "n2"}));
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_EQ(f.reason(), "healthd: DEEP-CHECK: exit 1: busbw 12.5 GB/s below 180");
  EXPECT_EQ(f.responder->status()["own_drain"]["held"], true);
}

TEST(Cure, ADrainOnlyFaultRunsNoStep) {
  CureFixture f;
  f.sweep_with(fault("KMSG-MCE", Remedy::drain, {}));
  f.sweep_with(fault("KMSG-MCE", Remedy::drain, {}));
  EXPECT_EQ(f.doctor.reset_count(), 0u);
  EXPECT_EQ(f.slurm.count("reboot n2"), 0);
  EXPECT_EQ(f.cure_status()["chain"], "drain only");
  for (int i = 0; i < 5; ++i) f.sweep_with(std::nullopt);
  EXPECT_EQ(f.slurm.count("resume n2"), 1);
}

TEST(Cure, ReportOnlyJournalsNoDrainAndNoStep) {
  PolicyConfig p;
  p.report_only = true;
  CureFixture f(p);
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.doctor.reset_count(), 0u);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
}

TEST(Cure, TheProgressSurvivesTheJournalFile) {
  ar::test::TempDir dir;
  Journal j(dir / "journal.json");
  CureProgress c;
  c.chain = {reset_gpu, reboot, replace};
  c.step = 1;
  c.phase = CureProgress::Phase::running;
  c.since = WallTime(std::chrono::milliseconds(1'800'000'000'123));
  c.gpus = {"00000000:3B:00.0"};
  c.boot_id = "b1";
  c.last = "reboot asked for";
  j.own_drain() = OwnDrain{"GPU-XID-48", "healthd: GPU-XID-48: x", c.since, false, true, c};
  ASSERT_TRUE(j.save());
  Journal back(dir / "journal.json");
  ASSERT_TRUE(back.load());
  ASSERT_TRUE(back.own_drain() && back.own_drain()->cure);
  const auto& b = *back.own_drain()->cure;
  EXPECT_EQ(b.chain, c.chain);
  EXPECT_EQ(b.step, 1u);
  EXPECT_EQ(b.phase, CureProgress::Phase::running);
  EXPECT_EQ(b.since, c.since);
  EXPECT_EQ(b.gpus, c.gpus);
  EXPECT_EQ(b.boot_id, "b1");
  EXPECT_EQ(b.last, c.last);
}

TEST(Cure, AJournalWithAnUnknownStepIsRefused) {
  ar::test::TempDir dir;
  std::ofstream(dir / "journal.json")
      << R"({"version":1,"next_id":1,"pending":[],"requeued":[],"fault_history_ms":[],)"
      << R"("own_drain":{"code":"X","reason":"r","at_ms":0,"held":false,"cure":{"chain":["rm -rf"],"step":0,)"
      << R"("phase":"pending","since_ms":0,"gpus":[],"boot_id":"","last":"","deep_checked":false}}})";
  Journal j(dir / "journal.json");
  auto r = j.load();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not a cure step"), std::string::npos) << r.error();
}

TEST(CureConfig, ChainsAreReadAndCheckedWithTheirPosition) {
  auto ok = parse_config(R"(
[cure]
reset_timeout_s = 60
[[cure.chain]]
xid = 48
steps = ["reset_gpu", "replace"]
[[cure.chain]]
code = "KMSG-MCE"
steps = []
)", "healthd.toml", {});
  ASSERT_TRUE(ok) << ok.error();
  ASSERT_EQ(ok->policy.cure.chains.size(), 2u);
  EXPECT_EQ(ok->policy.cure.chains[0].xid, 48u);
  EXPECT_EQ(ok->policy.cure.chains[0].steps, (std::vector<Action>{reset_gpu, replace}));
  EXPECT_TRUE(ok->policy.cure.chains[1].steps.empty());
  EXPECT_EQ(ok->policy.cure.reset_timeout, 60s);

  auto both = parse_config("[[cure.chain]]\ncode = \"X\"\nxid = 1\nsteps = []\n", "healthd.toml", {});
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().find("needs one of code or xid"), std::string::npos) << both.error();
  auto bad = parse_config("[[cure.chain]]\nxid = 1\nsteps = [\"drain\"]\n", "healthd.toml", {});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("healthd.toml:3"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("reset_gpu, reboot, replace"), std::string::npos) << bad.error();
  auto twice = parse_config("[[cure.chain]]\nxid = 1\nsteps = [\"reboot\", \"reboot\"]\n", "healthd.toml", {});
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("twice"), std::string::npos) << twice.error();
}

TEST(Cure, AFaultBackDuringTheDeepCheckKeepsTheNodeOut) {
  PolicyConfig p;
  p.cure.deep_check = {"/usr/bin/dcgmi", "diag", "-r", "3"};
  CureFixture f(p);
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  for (int i = 0; i < 3; ++i) f.sweep_with(std::nullopt);  // the healthy passes journal the deep check
  ASSERT_EQ(f.doctor.deep_checks.size(), 1u);              // it passed
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));            // but the fault is back
  for (int i = 0; i < 2; ++i) f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
  EXPECT_TRUE(f.slurm.nodes["n2"].drain);
  // The reset did not cure it after all: the chain goes on, and the earlier pass no longer counts.
  EXPECT_EQ(f.slurm.count("reboot n2"), 1);
  EXPECT_EQ(f.cure_status()["deep_checked"], false);
  for (int i = 0; i < 4; ++i) f.sweep_with(std::nullopt);  // healthy while the reboot is pending
  EXPECT_EQ(f.slurm.count("resume n2"), 0);
}

TEST(Cure, AnAdminWhoResumesTheNodeMidChainEndsTheCure) {
  CureFixture f;
  const auto remap = fault("GPU-ROW-REMAP-PENDING", Remedy::drain);
  f.sweep_with(remap);
  ASSERT_EQ(f.doctor.reset_count(), 1u);
  // scontrol update state=resume: the admin's decision.
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}};
  f.sweep_with(remap);
  f.sweep_with(remap);
  EXPECT_EQ(f.slurm.count("reboot n2"), 0);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_FALSE(f.journal.own_drain().has_value());
  EXPECT_TRUE(f.responder->status().contains("admin_override"));
}

TEST(Cure, AReplacementWithheldByTheShareCapRequestsNothingYet) {
  PolicyConfig p;
  p.hooks = {{"replace-it", {replace}, {"/usr/local/bin/replace", "%n"}, 30s, 3, ""}};
  CureFixture f(p);
  const auto lost = fault("GPU-LOST", Remedy::reboot);
  f.sweep_with(lost);
  ASSERT_EQ(f.slurm.count("reboot n2"), 1);
  // Back from its reboot with the fault, resumed by an admin meanwhile, while half the partition is
  // drained already.
  f.slurm.nodes["n2"] = NodeInfo{"n2", "IDLE", "", {"debug"}};
  for (const char* n : {"n1", "n3"}) {
    f.slurm.nodes[n].drain = true;
    f.slurm.nodes[n].reason = "maintenance";
  }
  f.rebuild("boot-2");
  f.sweep_with(lost);
  f.sweep_with(lost);
  EXPECT_EQ(f.slurm.count("drain n2"), 0);
  EXPECT_TRUE(f.doctor.deep_checks.empty());  // no replace hook ran
  EXPECT_TRUE(f.responder->status().contains("drain_withheld"));
  // Room again: the replacement goes ahead.
  f.slurm.nodes["n1"].drain = false;
  for (int i = 0; i < 40 && f.slurm.count("drain n2") == 0; ++i) f.sweep_with(lost);
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.reason(), "healthd: GPU-LOST: on GPU 0 (replacement requested)");
}

TEST(Cure, ReportOnlyWalksNoStepOfACureJournalledBefore) {
  CureFixture f;
  f.doctor.reset_answers = {{GpuResetOutcome::Kind::failed, "reset failed"}};
  PolicyConfig quiet = f.policy;
  quiet.cure.chains = {{"", 48u, {reset_gpu, replace}, ""}};
  quiet.hooks = {{"replace-it", {replace}, {"/usr/local/bin/replace", "%n"}, 30s, 3, ""}};
  f.policy = quiet;
  f.rebuild("boot-1");
  f.slurm.nodes["n2"].drain = true;  // drained by healthd before report_only was set
  f.slurm.nodes["n2"].reason = "healthd: GPU-XID-48: on GPU 0";
  CureProgress c;
  c.chain = {reset_gpu, replace};
  c.phase = CureProgress::Phase::verifying;
  c.since = f.now - 10s;
  f.journal.own_drain() = OwnDrain{"GPU-XID-48", "healthd: GPU-XID-48: on GPU 0", f.now - 10s, false, false, c};
  quiet.report_only = true;
  f.responder->set_policy(quiet);
  for (int i = 0; i < 3; ++i) f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.cure_status()["phase"], "verifying");
  EXPECT_EQ(f.reason(), "healthd: GPU-XID-48: on GPU 0");
  // Acting again: the fault found after the reset goes on to the replacement.
  quiet.report_only = false;
  f.responder->set_policy(quiet);
  f.sweep_with(fault("GPU-XID-48", Remedy::reset_gpu));
  EXPECT_EQ(f.reason(), "healthd: GPU-XID-48: on GPU 0 (replacement requested)");
}

// `healthd --check-config` names each cure step this site cannot run, as warnings: the config passes.
TEST(CureCheckConfig, NamesTheStepsThisSiteCannotRunWithoutFailing) {
  ar::test::TempDir dir;
  const auto file = dir / "healthd.toml";
  std::ofstream(file) << "[cure]\nreset_command = [\"/nonexistent/nvidia-smi\", \"--gpu-reset\", \"-i\", \"%g\"]\n";
  std::ostringstream out, err;
  Overrides overrides;
  overrides.node_name = "node-7";
  ASSERT_EQ(check_config(file, overrides, out, err), 0) << err.str();
  const auto text = out.str();
  EXPECT_NE(text.find("warning: cure steps this site cannot run"), std::string::npos) << text;
  EXPECT_NE(text.find("  reset_gpu: [cure] reset_command /nonexistent/nvidia-smi cannot be run"), std::string::npos) << text;
  EXPECT_NE(text.find("  replace: no [[policy.hook]] runs on replace"), std::string::npos) << text;
  // Whether slurm.conf has a RebootProgram is slurmctld's to say; here there is none to ask.
  EXPECT_NE(text.find("  reboot: "), std::string::npos) << text;

  // With a runnable reset command and a replace hook, only the reboot may remain.
  std::ofstream(file) << "[cure]\nreset_command = [\"/bin/true\"]\n"
                      << "[[policy.hook]]\nname = \"r\"\non = [\"replace\"]\ncommand = [\"/bin/true\"]\n";
  std::ostringstream out2, err2;
  ASSERT_EQ(check_config(file, overrides, out2, err2), 0) << err2.str();
  EXPECT_EQ(out2.str().find("  reset_gpu: "), std::string::npos) << out2.str();
  EXPECT_EQ(out2.str().find("  replace: "), std::string::npos) << out2.str();
}
