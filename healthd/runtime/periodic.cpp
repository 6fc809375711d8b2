#include "periodic.hpp"

#include <algorithm>

namespace ar::healthd {

void PeriodicTasks::every(std::chrono::milliseconds every, std::function<void()> task, bool first_now) {
  if (every.count() <= 0) return;
  this->every([every] { return every; }, std::move(task), first_now);
}

void PeriodicTasks::every(std::function<std::chrono::milliseconds()> period, std::function<void()> task, bool first_now) {
  auto& t = *tasks_.emplace_back(std::make_unique<Task>(io_, std::move(period), std::move(task)));
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
  task.timer.expires_after(std::max(task.period(), std::chrono::milliseconds(1)));
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
