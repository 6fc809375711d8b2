// The retry waits of healthd (runtime/backoff.hpp): doubling, capped, and spread at random so that the
// daemons of many nodes that failed at the same moment do not try again in the same second.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "runtime/backoff.hpp"
#include "state/journal.hpp"
#include "temp_dir.hpp"

namespace ar::healthd {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

TEST(Backoff, DoublesFromTheFirstWaitUpToTheCapLessAtMostHalf) {
  auto rng = backoff_rng();
  for (int round = 0; round < 200; ++round) {
    for (std::uint32_t failures = 1; failures <= 10; ++failures) {
      const auto full = std::min(milliseconds(2000) * (1 << (failures - 1)), milliseconds(60000));
      const auto d = backoff_delay(failures, 2s, 60s, rng);
      EXPECT_LE(d, full) << failures;
      EXPECT_GE(d, full / 2) << failures;
    }
  }
  // A first wait past the cap is the cap.
  EXPECT_LE(backoff_delay(1, 10s, 3s, rng), milliseconds(3000));
}

// 1,000 daemons whose Slurm action failed at the same moment: how many try again within one second.
// Without the random part every one of them would, at 2 s, 6 s, 14 s ...
TEST(Backoff, AThousandDaemonsFailingTogetherDoNotRetryInTheSameSecond) {
  std::map<std::int64_t, int> per_second;
  for (int daemon = 0; daemon < 1000; ++daemon) {
    auto rng = backoff_rng();  // as each daemon seeds its own
    per_second[backoff_delay(4, 2s, 60s, rng).count() / 1000]++;  // the 4th try: 16 s, less up to 8 s
  }
  int most = 0;
  for (const auto& [second, n] : per_second) most = std::max(most, n);
  EXPECT_GE(per_second.size(), 8u);
  EXPECT_LT(most, 200);
}

TEST(Journal, AFailedActionIsTriedAgainAfterABackoffWithARandomPart) {
  ar::test::TempDir dir;
  Journal journal(dir / "journal.json");
  ASSERT_TRUE(journal.load());
  const auto now = WallTime(std::chrono::seconds(1'800'000'000));
  JournalEntry e;
  e.kind = Action::drain;
  e.node = "n2";
  auto id = journal.add(e);
  ASSERT_TRUE(id);
  std::vector<WallTime> tries;
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(journal.retry_later(*id, "Unable to contact slurm controller", now));
    tries.push_back(journal.pending().front().next_try);
  }
  // 2 s, 4 s, 8 s after the failure, each less up to half
  EXPECT_GE(tries[0], now + 1s);
  EXPECT_LE(tries[0], now + 2s);
  EXPECT_GE(tries[1], now + 2s);
  EXPECT_LE(tries[1], now + 4s);
  EXPECT_GE(tries[2], now + 4s);
  EXPECT_LE(tries[2], now + 8s);
}

}  // namespace
}  // namespace ar::healthd
