#include "periodic.hpp"

namespace ar::healthd {

void PeriodicTasks::every(std::chrono::milliseconds every, std::function<void()> task, bool first_now) {
  if (every.count() <= 0) return;
  auto& t = *tasks_.emplace_back(std::make_unique<Task>(io_, every, std::move(task)));
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
  task.timer.expires_after(task.period);
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
