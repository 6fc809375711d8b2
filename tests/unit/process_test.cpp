#include <gtest/gtest.h>

#include "actions/process.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

TEST(Process, CapturesOutputAndExitCode) {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, 5s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_FALSE(r->timed_out);
}

TEST(Process, HangingProgramIsKilledAtTheDeadline) {
  auto start = std::chrono::steady_clock::now();
  // The child shell starts a grandchild that holds the pipes: both must go.
  auto r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, 200ms);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(Process, ProgramThatClosesOutputButRunsOnStillTimesOut) {
  auto r = run_process({"sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, 200ms);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
}

TEST(Process, OutputIsBounded) {
  auto r = run_process({"sh", "-c", "head -c 100000 /dev/zero"}, 5s, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out.size(), 1000u);
  EXPECT_EQ(r->exit_code, 0);
}

TEST(Process, MissingProgramIsAnError) {
  auto r = run_process({"/nonexistent/scontrol"}, 1s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("/nonexistent/scontrol"), std::string::npos);
}
