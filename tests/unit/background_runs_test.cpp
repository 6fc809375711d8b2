// BackgroundRuns: the engine starts work on a thread and polls for its result, never waiting.
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "actions/background_runs.hpp"

namespace ar::healthd {
namespace background_runs_test {

// Polls until `id` has a result, 10 s at most (a deadline, not a timing assertion).
template <class Result>
std::optional<Result> poll(BackgroundRuns<Result>& runs, std::uint64_t id) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto r = runs.take(id)) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return std::nullopt;
}

TEST(BackgroundRuns, AResultIsTakenOnceTheWorkEndsAndNotBefore) {
  BackgroundRuns<std::string> runs([](const std::string& what) { return "threw: " + what; });
  std::promise<void> go;
  auto gate = go.get_future().share();
  ASSERT_TRUE(runs.start(7, [gate] {
    gate.wait();
    return std::string("done");
  }));
  EXPECT_TRUE(runs.running(7));
  EXPECT_FALSE(runs.running(8));
  // Still running: nothing to take, and the run is still followed.
  EXPECT_FALSE(runs.take(7));
  EXPECT_TRUE(runs.running(7));
  go.set_value();
  auto r = poll(runs, 7);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "done");
  // Taken: forgotten, so the entry's next try starts it again.
  EXPECT_FALSE(runs.running(7));
  EXPECT_FALSE(runs.take(7));
}

TEST(BackgroundRuns, WorkThatThrowsComesBackAsTheCallersFailure) {
  BackgroundRuns<std::string> runs([](const std::string& what) { return "threw: " + what; });
  ASSERT_TRUE(runs.start(1, []() -> std::string { throw std::runtime_error("NVML wedged"); }));
  auto r = poll(runs, 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "threw: NVML wedged");
}

TEST(BackgroundRuns, RunsOfSeveralEntriesAreKeptApart) {
  BackgroundRuns<int> runs([](const std::string&) { return -1; });
  ASSERT_TRUE(runs.start(1, [] { return 10; }));
  ASSERT_TRUE(runs.start(2, [] { return 20; }));
  EXPECT_EQ(poll(runs, 2), 20);
  EXPECT_EQ(poll(runs, 1), 10);
}

TEST(BackgroundRuns, AForgottenRunIsNoLongerFollowedAndItsThreadEndsOnItsOwn) {
  BackgroundRuns<int> runs([](const std::string&) { return -1; });
  std::promise<void> go;
  auto gate = go.get_future().share();
  std::promise<void> ended;
  auto finished = ended.get_future();
  ASSERT_TRUE(runs.start(3, [gate, &ended] {
    gate.wait();
    ended.set_value();
    return 3;
  }));
  runs.forget(3);
  EXPECT_FALSE(runs.running(3));
  go.set_value();
  EXPECT_EQ(finished.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_FALSE(runs.take(3));
}

}  // namespace background_runs_test
}  // namespace ar::healthd
