#include "periodic.hpp"

#include <algorithm>

namespace ar::healthd {

std::chrono::milliseconds spread_phase(std::chrono::milliseconds period, std::minstd_rand& rng) {
  std::uniform_int_distribution<std::int64_t> part(1, std::max<std::int64_t>(period.count(), 1));
  return std::chrono::milliseconds(part(rng));
}

void PeriodicTasks::every(std::chrono::milliseconds every, std::function<void()> task, bool first_now, Phase phase) {
  if (every.count() <= 0) return;
  this->every([every] { return every; }, std::move(task), first_now, phase);
}

void PeriodicTasks::every(std::function<std::chrono::milliseconds()> period, std::function<void()> task, bool first_now,
                          Phase phase) {
  auto& t = *tasks_.emplace_back(std::make_unique<Task>(io_, std::move(period), std::move(task)));
  t.spread_next = phase == Phase::spread;
  if (first_now) {
    asio::post(io_, [this, &t] {
      if (stopped_) return;
      t.run();
      arm(t);
    });
  } else {
    arm(t);
  }
}

void PeriodicTasks::arm(Task& task) {
  if (stopped_) return;  // stopped by the task that just ran
  // At least a millisecond: a period of 0 would spin the event loop.
  auto wait = std::max(task.period(), std::chrono::milliseconds(1));
  if (task.spread_next) wait = spread_phase(wait, rng_);
  task.spread_next = false;
  task.timer.expires_after(wait);
  task.timer.async_wait([this, &task](const asio::error_code& e) {
    if (e || stopped_) return;
    task.run();
    arm(task);
  });
}

void PeriodicTasks::stop() {
  stopped_ = true;
  for (auto& t : tasks_) t->timer.cancel();
}

}  // namespace ar::healthd
