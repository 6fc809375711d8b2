#include "engine.hpp"

#include <spdlog/spdlog.h>

namespace ar::healthd {

Engine::Engine(std::vector<std::shared_ptr<Check>> checks, Responder& responder, std::chrono::milliseconds check_deadline)
    : checks_(std::move(checks)), responder_(responder), check_deadline_(check_deadline) {}

Engine::~Engine() { stop(); }

void Engine::start() { thread_ = std::thread([this] { loop(); }); }

void Engine::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // A hung check's thread cannot be joined; its future is abandoned with the process.
  for (auto& [name, f] : hung_) (void)new std::shared_future<CheckResult>(f);
}

void Engine::request_sweep(std::string why, std::vector<LocalJob> jobs, std::optional<StepFailure> trigger) {
  {
    std::lock_guard lock(mutex_);
    // Periodic sweeps need not pile up behind a slow one; every triggered sweep is kept.
    if (!trigger && !requests_.empty() && !requests_.back().trigger) requests_.back() = {std::move(why), std::move(jobs), std::nullopt};
    else requests_.push_back({std::move(why), std::move(jobs), std::move(trigger)});
  }
  wake_.notify_all();
}

void Engine::reconfigure(const PolicyConfig& policy) {
  {
    std::lock_guard lock(mutex_);
    new_policy_ = policy;
    check_deadline_ = policy.check_deadline;
  }
  wake_.notify_all();
}

nlohmann::json Engine::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

CheckResult Engine::run_bounded(const std::shared_ptr<Check>& check) {
  std::chrono::milliseconds deadline;
  {
    std::lock_guard lock(mutex_);
    deadline = check_deadline_;
  }
  const auto name = check->name();
  CheckResult late;
  late.check = name;
  late.status = Status::error;
  late.at = std::chrono::system_clock::now();
  if (auto it = hung_.find(name); it != hung_.end()) {
    if (it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      late.message = "still running past its deadline from an earlier sweep";
      return late;
    }
    hung_.erase(it);
  }
  auto start = std::chrono::steady_clock::now();
  std::shared_future<CheckResult> f = std::async(std::launch::async, [check] {
                                        try {
                                          return check->run();
                                        } catch (const std::exception& e) {
                                          CheckResult r;
                                          r.check = check->name();
                                          r.status = Status::error;
                                          r.message = std::string("check crashed: ") + e.what();
                                          r.at = std::chrono::system_clock::now();
                                          return r;
                                        }
                                      }).share();
  if (f.wait_for(deadline) != std::future_status::ready) {
    hung_[name] = f;
    late.message = "did not finish within " + std::to_string(deadline.count()) + " ms";
    late.duration = deadline;
    spdlog::error("check {}: {}", name, late.message);
    return late;
  }
  auto r = f.get();
  r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  return r;
}

std::vector<CheckResult> Engine::sweep() {
  std::vector<CheckResult> results;
  for (const auto& c : checks_) results.push_back(run_bounded(c));
  return results;
}

void Engine::loop() {
  auto last_follow = std::chrono::steady_clock::now();
  for (;;) {
    std::optional<SweepRequest> request;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping_ || !requests_.empty(); });
      if (stopping_) return;
      if (!requests_.empty()) {
        request = std::move(requests_.front());
        requests_.pop_front();
      }
      if (new_policy_) {
        responder_.set_policy(*new_policy_);
        new_policy_.reset();
      }
    }
    auto now = std::chrono::system_clock::now();
    try {
      if (request) {
        spdlog::debug("sweep: {}", request->why);
        auto results = sweep();
        responder_.on_sweep(results, request->jobs, request->trigger, now);
        nlohmann::json checks = nlohmann::json::array();
        for (const auto& r : results) checks.push_back(r.to_json());
        std::lock_guard lock(mutex_);
        status_["checks"] = checks;
        status_["last_sweep"] = request->why;
      }
      responder_.run_due(std::chrono::system_clock::now());
      if (std::chrono::steady_clock::now() - last_follow > std::chrono::milliseconds(200)) {
        responder_.follow_requeued(std::chrono::system_clock::now());
        last_follow = std::chrono::steady_clock::now();
      }
      auto rs = responder_.status();
      std::lock_guard lock(mutex_);
      status_["node"] = rs;
    } catch (const std::exception& e) {
      spdlog::error("engine: {}", e.what());
    }
  }
}

}  // namespace ar::healthd
