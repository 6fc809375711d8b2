// The event loop's periodic tasks: each re-arms itself, reads its period again each time (a reload
// changes it), and stop() ends them all.
#include <gtest/gtest.h>

#include "runtime/periodic.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

TEST(PeriodicTasks, RunFirstAtOnceReadTheirPeriodAtEachRearmAndStopTogether) {
  asio::io_context io;
  PeriodicTasks tasks(io);
  asio::steady_timer guard(io);  // the test's own deadline
  int runs = 0, period_reads = 0, other = 0;
  tasks.every(
      [&] {
        ++period_reads;
        return std::chrono::milliseconds(1);
      },
      [&] {
        if (++runs < 5) return;
        tasks.stop();
        guard.cancel();
      },
      true);
  tasks.every(1ms, [&] { ++other; });
  tasks.every(0ms, [&] { ADD_FAILURE() << "a period of 0 is no task"; });
  guard.expires_after(10s);
  guard.async_wait([&](const asio::error_code& e) {
    if (!e) ADD_FAILURE() << "the tasks did not stop";
  });
  io.run();  // returns once stop() cancelled every timer: nothing is left armed
  EXPECT_EQ(runs, 5);
  EXPECT_EQ(period_reads, 4);  // the first run comes at once; each later one after reading the period
  EXPECT_GE(other, 1);
}
