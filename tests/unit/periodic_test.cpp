// The event loop's periodic tasks: each re-arms itself, reads its period again each time (a reload
// changes it), and stop() ends them all.
#include <algorithm>
#include <vector>

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

// A thousand daemons restarted in the same second: their sweeps' phases spread over the whole
// interval (without a spread they would all sweep in that second, every interval, for good).
TEST(PeriodicTasks, SpreadPhasesOfAThousandDaemonsCoverTheInterval) {
  std::minstd_rand rng(42);
  const auto period = 30'000ms;
  std::vector<int> per_second(30, 0);
  for (int daemon = 0; daemon < 1000; ++daemon) {
    const auto phase = spread_phase(period, rng);
    ASSERT_GE(phase, 1ms);
    ASSERT_LE(phase, period);
    ++per_second[std::min<std::int64_t>(29, (phase.count() - 1) / 1000)];
  }
  // About 33 a second; never near the 1,000 of an aligned start.
  EXPECT_LT(*std::max_element(per_second.begin(), per_second.end()), 70);
  EXPECT_GT(*std::min_element(per_second.begin(), per_second.end()), 10);
  EXPECT_EQ(spread_phase(0ms, rng), 1ms);  // never a wait of 0 (the event loop would spin)
}

TEST(PeriodicTasks, ASpreadTaskRunsAtOnceThenEveryWholePeriodAfterItsSecondRun) {
  asio::io_context io;
  PeriodicTasks tasks(io);
  std::vector<std::chrono::steady_clock::time_point> runs;
  tasks.every(
      200ms,
      [&] {
        runs.push_back(std::chrono::steady_clock::now());
        if (runs.size() == 3) tasks.stop();
      },
      true, PeriodicTasks::Phase::spread);
  io.run();
  ASSERT_EQ(runs.size(), 3u);
  // The second run is at a random point of the period (spread_phase, above); the third a whole
  // period after the second: the spread is a phase, once, not a shorter period.
  EXPECT_GE(runs[2] - runs[1], 200ms);
}
