// A blocking call (libslurm's) bounded by a deadline: the caller gets an answer in time, and a call
// that never returns holds one thread, never more.
#include <atomic>
#include <future>

#include <gtest/gtest.h>

#include "actions/bounded_call.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

TEST(BoundedCaller, ReturnsTheValueOfACallThatAnswersInTime) {
  BoundedCaller c(2000ms);
  auto r = c.run<int>("answer", [] { return 42; });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 42);
  auto s = c.run<std::string>("again", [] { return std::string("yes"); });
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, "yes");
}

TEST(BoundedCaller, AStuckCallCostsTheDeadlineAndLaterCallsAreRefusedAtOnceUntilItReturns) {
  std::promise<void> unblock;
  auto gate = unblock.get_future().share();
  std::atomic<int> started{0};
  BoundedCaller c(200ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c.run<int>("load job 7", [&, gate] {
    ++started;
    gate.wait();
    return 1;
  });
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("load job 7: Slurm did not answer within 200 ms"), std::string::npos) << r.error();
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 5s);

  const auto t1 = std::chrono::steady_clock::now();
  auto refused = c.run<int>("drain node n1", [&] {
    ++started;
    return 2;
  });
  ASSERT_FALSE(refused);
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 100ms);  // not another deadline
  EXPECT_NE(refused.error().find("an earlier call, load job 7, has not returned"), std::string::npos) << refused.error();
  EXPECT_EQ(started.load(), 1);  // the refused call never ran

  unblock.set_value();
  // Once the stuck call returns, calls go through again.
  std::expected<int, std::string> again = std::unexpected(std::string("not tried"));
  for (int i = 0; i < 100 && !again; ++i) {
    again = c.run<int>("ping", [] { return 3; });
    if (!again) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(*again, 3);
}

TEST(BoundedCaller, IsDestroyedWithoutWaitingForAStuckCall) {
  std::promise<void> unblock;
  auto gate = unblock.get_future().share();
  {
    BoundedCaller c(50ms);
    auto r = c.run<int>("stuck", [gate] {
      gate.wait();
      return 1;
    });
    EXPECT_FALSE(r);
    const auto t0 = std::chrono::steady_clock::now();
    // ~BoundedCaller here: it must not join the stuck worker.
    (void)t0;
  }
  unblock.set_value();  // the detached worker ends on its own
  std::this_thread::sleep_for(50ms);
}
