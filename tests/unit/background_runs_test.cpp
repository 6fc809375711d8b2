// BackgroundRuns: the engine starts work on a thread and takes its result once the run posts its end,
// never waiting.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

// A run's end is posted with its id, after its result is there to take: what wakes the engine.
TEST(BackgroundRuns, EachRunsEndIsPostedWithItsIdOnceItsResultIsThere) {
  auto ended = std::make_shared<RunsEnded>();
  BackgroundRuns<std::string> runs([](const std::string& what) { return "threw: " + what; });
  runs.report_ends_to(ended);
  std::mutex m;
  std::condition_variable cv;
  int wakes = 0;
  ended->set_wake([&] {
    {
      std::lock_guard lock(m);
      ++wakes;
    }
    cv.notify_all();
  });
  ASSERT_TRUE(runs.start(7, [] { return std::string("done"); }));
  ASSERT_TRUE(runs.start(8, []() -> std::string { throw std::runtime_error("boom"); }));
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return wakes == 2; }));
  }
  auto ids = ended->take();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{7, 8}));
  EXPECT_TRUE(ended->take().empty());  // taken once
  EXPECT_EQ(runs.take(7), "done");     // posted after the result was stored: there at once
  EXPECT_EQ(runs.take(8), "threw: boom");
  // With no wake set (the engine gone), a post is kept and wakes no one.
  ended->set_wake({});
  ASSERT_TRUE(runs.start(9, [] { return std::string("late"); }));
  EXPECT_TRUE(poll(runs, 9));
  std::vector<std::uint64_t> late;
  for (int i = 0; i < 5000 && late.empty(); ++i) {
    late = ended->take();
    if (late.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(late, (std::vector<std::uint64_t>{9}));
  std::lock_guard lock(m);
  EXPECT_EQ(wakes, 2);
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
