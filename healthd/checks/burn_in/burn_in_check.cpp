#include "burn_in_check.hpp"

#include <spdlog/spdlog.h>

#include "checks/result_util.hpp"
#include "config/fields.hpp"
#include "text/text.hpp"

namespace ar::healthd {
BurnInCheck::BurnInCheck(CureConfig config, std::string node, std::shared_ptr<const std::atomic<std::size_t>> jobs_here,
                         std::shared_ptr<const std::atomic<bool>> out, Runner runner)
    : config_(std::move(config)),
      node_(std::move(node)),
      jobs_here_(std::move(jobs_here)),
      out_(std::move(out)),
      runner_(std::move(runner)) {
  if (!jobs_here_) jobs_here_ = std::make_shared<std::atomic<std::size_t>>(0);
  if (!out_) out_ = std::make_shared<std::atomic<bool>>(false);
}

BurnInCheck::~BurnInCheck() { stop(); }

void BurnInCheck::stop() {
  stopping_ = true;  // a run under way is killed within 100 ms
  std::thread t;
  {
    std::lock_guard lock(mutex_);
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
}

bool BurnInCheck::clear(const std::string& code) {
  std::lock_guard lock(mutex_);
  if (code != "BURN-IN" || !failure_) return false;
  failure_.reset();
  return true;
}

void BurnInCheck::start_run(Clock::time_point now) {
  if (thread_.joinable()) thread_.join();  // the last run's thread, finished
  std::vector<std::string> argv;
  for (const auto& word : config_.deep_check) argv.push_back(expand_node_name(word, node_));
  std::vector<std::string> env = {"HEALTHD_ACTION=burn_in", "HEALTHD_NODE=" + sanitize(node_, 255)};
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.deep_check_timeout);
  running_ = true;
  spdlog::info("burn_in: node idle for {} s: running {}", std::chrono::duration_cast<std::chrono::seconds>(now - *idle_since_).count(),
               argv.front());
  thread_ = std::thread([this, argv = std::move(argv), env = std::move(env), timeout] {
    std::expected<ProcessResult, std::string> r = std::unexpected(std::string("did not run"));
    const std::function<bool()> cancel = [this] { return busy(); };
    try {
      r = runner_ ? runner_(argv, env, timeout, cancel) : run_process(argv, timeout, 64 * 1024, env, cancel);
    } catch (const std::exception& e) {
      r = std::unexpected(std::string(e.what()));
    }
    std::lock_guard lock(mutex_);
    finished_ = std::move(r);
    running_ = false;
  });
}

std::vector<CheckResult> BurnInCheck::run() {
  if (!wanted(config_)) return {not_applicable_result(name(), "off ([cure] burn_in_idle_s and deep_check)")};
  const auto now = Clock::now();
  std::lock_guard lock(mutex_);
  if (finished_) {
    const auto r = std::move(*finished_);
    finished_.reset();
    if (r && r->cancelled) {
      last_ = out_->load() ? "stopped: the node is out of service" : "stopped: a job landed";
      spdlog::info("burn_in: {}", last_);
    } else {
      last_run_ = now;
      std::string failure;
      if (!r) failure = "did not run: " + sanitize(r.error(), 200);
      else if (r->timed_out) failure = "no result within " + std::to_string(config_.deep_check_timeout.count()) + " s";
      else if (r->signaled || r->exit_code != 0) {
        const auto said = first_output_line(*r);
        failure = (r->signaled ? std::string("killed by a signal") : "exit " + std::to_string(r->exit_code)) +
                  (said.empty() ? "" : ": " + said);
      }
      if (failure.empty()) {
        last_ = "passed";
        failure_.reset();
      } else {
        last_ = "failed: " + failure;
        spdlog::error("burn_in: the deep check failed on an idle node: {}", failure);
        failure_ = make_finding(name(), "BURN-IN", Remedy::drain, "burn-in on the idle node failed: " + failure);
      }
    }
  }
  if (jobs_here_->load() > 0 || out_->load()) idle_since_.reset();
  else if (!idle_since_) idle_since_ = now;
  const bool due = !last_run_ || now - *last_run_ >= config_.burn_in_every;
  if (!running_ && !stopping_ && idle_since_ && now - *idle_since_ >= config_.burn_in_idle && due) start_run(now);
  if (failure_) {
    CheckResult f = *failure_;
    f.at = std::chrono::system_clock::now();
    return {f};
  }
  std::string message = running_ ? "running the deep check on the idle node"
                        : last_.empty() ? "waiting for the node to be idle " + std::to_string(config_.burn_in_idle.count()) + " s"
                                        : "last run " + last_;
  CheckResult r = make_result(name(), Status::ok, message);
  r.detail = {{"running", running_}, {"last", last_}};
  return {r};
}

}  // namespace ar::healthd
