// The burn-in check with real programs: it waits for an idle node, runs at most every interval, a
// job landing kills the run at once (no verdict), a failure is a standing fault until a pass or a clear.
#include <atomic>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "checks/burn_in/burn_in_check.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {

CureConfig burn_in(std::vector<std::string> program, std::chrono::seconds idle = 1s) {
  CureConfig c;
  c.deep_check = std::move(program);
  c.burn_in_idle = idle;
  c.burn_in_every = 3600s;
  c.deep_check_timeout = 30s;
  return c;
}

// Runs the check until `done` holds of its result, or 10 s pass.
CheckResult run_until(BurnInCheck& check, const std::function<bool(const CheckResult&)>& done) {
  CheckResult last;
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    last = check.run().front();
    if (done(last)) break;
    std::this_thread::sleep_for(20ms);
  }
  return last;
}

}  // namespace

TEST(BurnIn, OffUnlessIdleTimeAndProgramAreSet) {
  auto jobs = std::make_shared<std::atomic<std::size_t>>(0);
  BurnInCheck off(burn_in({}), "n1", jobs, nullptr);
  EXPECT_FALSE(off.run().front().applicable);
  EXPECT_FALSE(BurnInCheck::wanted(burn_in({"/bin/true"}, 0s)));
}

TEST(BurnIn, APassingRunOnAnIdleNodeIsOkAndNotRepeatedWithinTheInterval) {
  auto jobs = std::make_shared<std::atomic<std::size_t>>(0);
  std::atomic<int> runs{0};
  BurnInCheck check(burn_in({"/bin/true"}), "n1", jobs, nullptr,
                    [&](const std::vector<std::string>& argv, const std::vector<std::string>& env, std::chrono::milliseconds t,
                        const std::function<bool()>& cancel) {
                      ++runs;
                      return run_process(argv, t, 1024, env, cancel);
                    });
  EXPECT_EQ(check.run().front().status, Status::ok);
  EXPECT_EQ(runs, 0);  // not idle long enough yet
  auto r = run_until(check, [](const CheckResult& c) { return c.message.find("passed") != std::string::npos; });
  EXPECT_EQ(r.status, Status::ok) << r.message;
  EXPECT_NE(r.message.find("passed"), std::string::npos) << r.message;
  std::this_thread::sleep_for(1200ms);
  check.run();
  EXPECT_EQ(runs, 1);
}

TEST(BurnIn, AJobLandingStopsTheRunAtOnceWithoutAVerdict) {
  auto jobs = std::make_shared<std::atomic<std::size_t>>(0);
  BurnInCheck check(burn_in({"/bin/sleep", "30"}), "n1", jobs, nullptr);
  run_until(check, [](const CheckResult& c) { return c.message.find("running") != std::string::npos; });
  const auto landed = std::chrono::steady_clock::now();
  jobs->store(1);
  auto r = run_until(check, [](const CheckResult& c) { return c.message.find("stopped") != std::string::npos; });
  EXPECT_LT(std::chrono::steady_clock::now() - landed, 3s);
  EXPECT_EQ(r.status, Status::ok) << r.message;
  EXPECT_NE(r.message.find("a job landed"), std::string::npos) << r.message;
  // Not run again while the job is here.
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(check.run().front().message.find("running"), std::string::npos);
}

TEST(BurnIn, AFailureIsAStandingFaultUntilCleared) {
  ar::test::TempDir dir;
  auto script = dir / "diag.sh";
  std::ofstream(script) << "#!/bin/sh\necho 'Diagnostic: Memory bandwidth FAIL on GPU 3'\nexit 226\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto jobs = std::make_shared<std::atomic<std::size_t>>(0);
  BurnInCheck check(burn_in({script.string()}), "n1", jobs, nullptr);
  auto r = run_until(check, [](const CheckResult& c) { return c.status == Status::fault; });
  ASSERT_EQ(r.status, Status::fault) << r.message;
  EXPECT_EQ(r.code, "BURN-IN");
  EXPECT_EQ(r.action, Remedy::drain);
  EXPECT_NE(r.message.find("exit 226: Diagnostic: Memory bandwidth FAIL on GPU 3"), std::string::npos) << r.message;
  EXPECT_EQ(check.run().front().status, Status::fault);  // stands
  EXPECT_FALSE(check.clear("GPU-XID-48"));
  EXPECT_TRUE(check.clear("BURN-IN"));
  EXPECT_EQ(check.run().front().status, Status::ok);
}

TEST(Process, CancelKillsTheChildWithinAFractionOfASecond) {
  std::atomic<bool> stop{false};
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    stop = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_process({"/bin/sleep", "30"}, 20s, 1024, {}, [&] { return stop.load(); });
  later.join();
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(BurnIn, NeverOnANodeHealthdHoldsOut) {
  auto jobs = std::make_shared<std::atomic<std::size_t>>(0);
  auto out = std::make_shared<std::atomic<bool>>(true);  // a drain, a cure under way
  BurnInCheck check(burn_in({"/bin/sleep", "30"}), "n1", jobs, out);
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(check.run().front().message.find("running"), std::string::npos);
    std::this_thread::sleep_for(100ms);
  }
  // Returned to service: idle for burn_in_idle_s from then, and it runs; taken out again, it stops.
  out->store(false);
  run_until(check, [](const CheckResult& c) { return c.message.find("running") != std::string::npos; });
  out->store(true);
  auto r = run_until(check, [](const CheckResult& c) { return c.message.find("stopped") != std::string::npos; });
  EXPECT_NE(r.message.find("out of service"), std::string::npos) << r.message;
}
