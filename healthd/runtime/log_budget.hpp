// A budget of log lines per second for lines any local user can cause (a refused message, a
// refused connection): a flood of them costs a bounded amount of log, and what was left out is
// counted, so the next line written says how many were suppressed.
#pragma once

#include <chrono>
#include <cstddef>

namespace ar::healthd {

class LogBudget {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LogBudget(std::size_t lines_per_second) : per_second_(lines_per_second) {}

  // True when one more line may be written now; false counts it as suppressed.
  bool allow(Clock::time_point now = Clock::now()) {
    if (now - window_start_ >= std::chrono::seconds(1)) {
      window_start_ = now;
      used_ = 0;
    }
    if (used_ < per_second_) {
      ++used_;
      return true;
    }
    ++suppressed_;
    return false;
  }

  // Lines suppressed since the last call; the caller writes one line saying so.
  std::size_t take_suppressed() {
    auto k = suppressed_;
    suppressed_ = 0;
    return k;
  }

 private:
  std::size_t per_second_;
  Clock::time_point window_start_{};
  std::size_t used_ = 0;
  std::size_t suppressed_ = 0;
};

}  // namespace ar::healthd
