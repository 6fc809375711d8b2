#include "engine.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>


namespace ar::healthd {

Engine::Engine(std::vector<std::shared_ptr<Check>> checks, Responder& responder, std::chrono::milliseconds check_deadline,
               std::vector<DeviceInventory> inventories)
    : checks_(std::move(checks)),
      responder_(responder),
      actions_(responder.actions()),
      check_deadline_(check_deadline),
      inventories_(std::move(inventories)) {
  // A program or GPU reset that ended for a journal entry wakes the loop: its entry is carried out at
  // once, not at its next poll.
  actions_.runs_ended().set_wake([this] {
    {
      std::lock_guard lock(mutex_);
      run_ended_ = true;
    }
    wake_.notify_all();
  });
}

Check::JudgeNow Engine::judge_now() {
  return [this](const std::string& why) { request_sweep(why); };
}

Engine::~Engine() {
  stop();
  actions_.runs_ended().set_wake({});  // a run still going outlives the engine: its end wakes no one
}

void Engine::start() { thread_ = std::thread([this] { loop(); }); }

void Engine::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  abandon_hung();
}

// A hung check's thread cannot be joined; its future is abandoned (a future from std::async would
// otherwise wait for the thread in its destructor, and the engine with it).
void Engine::abandon_hung() {
  for (auto& [name, st] : state_)
    if (st.hung) (void)new std::shared_future<std::vector<CheckResult>>(*st.hung);
  state_.clear();
}

namespace {

// The jobs of two views of the node, `newer`'s record of a job taking the place of `older`'s.
std::vector<LocalJob> merged_views(const std::vector<LocalJob>& older, std::vector<LocalJob> newer) {
  for (const auto& job : older)
    if (std::none_of(newer.begin(), newer.end(), [&](const LocalJob& n) { return n.job_id == job.job_id; }))
      newer.push_back(job);
  return newer;
}

}  // namespace

void Engine::set_jobs(std::vector<LocalJob> jobs) {
  std::lock_guard lock(mutex_);
  jobs_ = std::move(jobs);
}

std::uint64_t Engine::request_sweep(std::string why, std::optional<StepFailure> trigger, bool force, bool poll) {
  std::uint64_t seq = 0;
  {
    std::lock_guard lock(mutex_);
    seq = next_seq_++;
    // A sweep judges the jobs as they were when it was asked for: an XID kills the job's processes,
    // and the step's end, handed over just after, must not take the job out before the sweep runs.
    auto jobs = jobs_;
    // Periodic (and poll) sweeps need not pile up behind a slow one. A triggered sweep is merged into
    // a waiting one for the same job attempt (a step of 2,000 tasks failing at once asks one sweep,
    // not 2,000), and into nothing else; a forced sweep is always kept (healthctl check --now waits
    // for its number).
    const bool mergeable = !trigger && !force;
    auto same_attempt = [&](const SweepRequest& r) {
      return trigger && r.trigger && !r.force && r.trigger->job_id == trigger->job_id &&
             r.trigger->restart_count == trigger->restart_count;
    };
    // A merged request judges every job of both views (the newer's record of a job wins): a job
    // the older one was asked for keeps its sweep.
    if (mergeable && !requests_.empty() && !requests_.back().trigger && !requests_.back().force &&
        requests_.back().poll == poll) {
      requests_.back() = {std::move(why), merged_views(requests_.back().jobs, std::move(jobs)), std::nullopt, false, seq, poll};
    } else if (auto it = std::find_if(requests_.begin(), requests_.end(), same_attempt);
               !force && it != requests_.end()) {
      it->jobs = merged_views(it->jobs, std::move(jobs));  // the first failure is kept
      it->seq = std::max(it->seq, seq);
    } else {
      requests_.push_back({std::move(why), std::move(jobs), std::move(trigger), force, seq, poll});
    }
  }
  wake_.notify_all();
  return seq;
}

void Engine::note(std::uint32_t job_id, TimelineEvent event) {
  {
    std::lock_guard lock(mutex_);
    notes_.emplace_back(job_id, std::move(event));
  }
  wake_.notify_all();
}

void Engine::admin(AdminAction action) {
  {
    std::lock_guard lock(mutex_);
    admin_.push_back(std::move(action));
  }
  wake_.notify_all();
}

void Engine::carry_out(const AdminAction& action) {
  const auto now = std::chrono::system_clock::now();
  switch (action.kind) {
    case AdminAction::Kind::drain: responder_.admin_drain(action.text, action.uid, action.request, now); break;
    case AdminAction::Kind::resume: responder_.admin_resume(action.force, action.uid, action.request, now); break;
    case AdminAction::Kind::clear: {
      auto [forgotten, busy] = forget(action.text);
      if (busy > 0) spdlog::warn("admin clear {}: {} check(s) hung in a run were not asked to forget it", action.text, busy);
      // The stored results still show it until the next sweep, which the service asks for.
      responder_.admin_clear(action.text, forgotten, busy, action.uid, action.request, now);
      break;
    }
  }
}

std::pair<std::size_t, std::size_t> Engine::forget(const std::string& code) {
  std::size_t forgotten = 0, busy = 0;
  for (const auto& c : checks_) {
    // A check still hung in a run holds its own lock: asking it to forget would hang the engine
    // with it. Its fault stays.
    if (auto st = state_.find(c->name()); st != state_.end() && st->second.hung) {
      ++busy;
      continue;
    }
    if (c->clear(code)) ++forgotten;
  }
  return {forgotten, busy};
}

void Engine::replace_checks(std::vector<std::shared_ptr<Check>> checks, Check::JudgeNow judge_now) {
  {
    std::lock_guard lock(mutex_);
    new_checks_ = Replacement{std::move(checks), std::move(judge_now)};
  }
  wake_.notify_all();
}

void Engine::take_checks(Replacement replacement) {
  for (const auto& check : replacement.checks) {
    auto st = state_.find(check->name());
    if (st != state_.end() && st->second.hung) continue;  // its old self is still running
    for (const auto& old : checks_)
      if (old->name() == check->name()) check->carry_over(*old);
  }
  for (const auto& check : replacement.checks) check->start(replacement.judge_now);
  // Every new check is due at once; a hung one's guard stays until its old run returns.
  for (auto it = state_.begin(); it != state_.end();) {
    if (it->second.hung) {
      it->second.last.clear();
      ++it;
    } else {
      it = state_.erase(it);
    }
  }
  checks_ = std::move(replacement.checks);
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
  nlohmann::json j = nlohmann::json::object();
  if (health_.sweep_seq > 0) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& r : health_.results) checks.push_back(r.to_json());
    j["checks"] = std::move(checks);
    for (const auto& [name, list] : listed_) j[name] = list;
    j["last_sweep"] = last_sweep_;
    if (last_sweep_job_) j["last_sweep_job"] = *last_sweep_job_;
    j["sweep_seq"] = health_.sweep_seq;
    j["sweep_ms"] = health_.sweep_ms;
  }
  if (!responder_status_.empty()) j["node"] = responder_status_;
  return j;
}

NodeStanding Engine::standing() const {
  std::lock_guard lock(mutex_);
  return health_.standing;
}

bool Engine::holds_code(const std::string& code) const {
  std::lock_guard lock(mutex_);
  return held_codes_.contains(code);
}

namespace {
CheckResult broken(const std::string& name, std::string message) {
  CheckResult r;
  r.check = name;
  r.status = Status::error;
  r.code = "CHECK-BROKEN";
  r.message = std::move(message);
  r.at = std::chrono::system_clock::now();
  return r;
}
}  // namespace

std::vector<CheckResult> Engine::run_bounded(const std::shared_ptr<Check>& check, CheckState& state) {
  std::chrono::milliseconds deadline = check->schedule().deadline;
  if (deadline.count() == 0) {
    std::lock_guard lock(mutex_);
    deadline = check_deadline_;
  }
  const auto name = check->name();
  if (state.hung) {
    if (state.hung->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return {broken(name, "still running past its deadline from an earlier sweep")};
    state.hung.reset();
  }
  auto start = std::chrono::steady_clock::now();
  std::shared_future<std::vector<CheckResult>> f =
      std::async(std::launch::async, [check]() -> std::vector<CheckResult> {
        try {
          auto results = check->run();
          if (results.empty()) return {broken(check->name(), "returned no result")};
          return results;
        } catch (const std::exception& e) {
          return {broken(check->name(), std::string("check crashed: ") + e.what())};
        } catch (...) {
          return {broken(check->name(), "check crashed")};
        }
      }).share();
  if (f.wait_for(deadline) != std::future_status::ready) {
    state.hung = f;
    auto late = broken(name, "did not finish within " + std::to_string(deadline.count()) + " ms");
    late.duration = deadline;
    spdlog::error("check {}: {}", name, late.message);
    return {late};
  }
  auto results = f.get();
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  for (auto& r : results) r.duration = took;
  return results;
}

std::vector<CheckResult> Engine::sweep(bool everything, bool poll) {
  std::vector<CheckResult> results;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& c : checks_) {
    auto& st = state_[c->name()];
    const auto every = c->schedule().every;
    const bool due = everything || st.last.empty() ||
                     (every.count() == 0 ? !poll : now - st.last_run >= every);
    if (due) {
      if (everything) c->requested_on_demand();
      st.last = run_bounded(c, st);
      st.last_run = now;
    }
    results.insert(results.end(), st.last.begin(), st.last.end());
  }
  return results;
}

void Engine::loop() {
  for (;;) {
    Inbox in = wait_for_work();
    auto now = std::chrono::system_clock::now();
    try {
      if (in.replacement) take_checks(std::move(*in.replacement));
      // A note handed over just before a stop (a step failed) is still recorded.
      for (auto& [job_id, event] : in.notes) responder_.note(job_id, std::move(event));
      // An admin's action handed over just before a stop is still journalled (and done at the next start).
      for (const auto& a : in.admin) carry_out(a);
      if (in.stop) return;
      const bool swept = in.request && run_sweep(*in.request, now);
      actions_.run_due(std::chrono::system_clock::now());
      actions_.follow_requeued(std::chrono::system_clock::now());  // each job at its own pace
      publish_status(swept);
    } catch (const std::exception& e) {
      spdlog::error("engine: {}", e.what());
    } catch (...) {
      spdlog::error("engine: unknown exception");
    }
  }
}

// Waits for the next request, or until a journal entry is due (a requeue waiting some tens of ms for
// its job to leave COMPLETING), and at most 250 ms; then takes what was handed over meanwhile.
Engine::Inbox Engine::wait_for_work() {
  Inbox in;
  std::unique_lock lock(mutex_);
  auto wait = std::chrono::milliseconds(250);
  if (auto due = actions_.next_due()) {
    auto until = std::chrono::duration_cast<std::chrono::milliseconds>(*due - std::chrono::system_clock::now());
    wait = std::clamp(until, std::chrono::milliseconds(0), wait);
  }
  wake_.wait_for(lock, wait,
                 [&] { return stopping_ || run_ended_ || !requests_.empty() || !notes_.empty() || !admin_.empty(); });
  run_ended_ = false;  // run_due takes the entries whose run ended
  in.notes.swap(notes_);
  in.admin.swap(admin_);
  in.stop = stopping_;
  if (!in.stop && !requests_.empty()) {
    in.request = std::move(requests_.front());
    requests_.pop_front();
  }
  if (new_policy_) {
    responder_.set_policy(*new_policy_);
    new_policy_.reset();
  }
  if (new_checks_) {
    in.replacement = std::move(*new_checks_);
    new_checks_.reset();
  }
  return in;
}

// One sweep, judged by the responder, and its results in the status. True: the status changed.
bool Engine::run_sweep(const SweepRequest& request, WallTime now) {
  spdlog::debug("sweep: {}", request.why);
  const auto started = std::chrono::steady_clock::now();
  auto results = sweep(request.force, request.poll);
  const auto took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  responder_.on_sweep(results, request.jobs, request.trigger, now, !request.poll);
  // The inventories' devices (healthctl gpus, the per-device metrics), then what each result read.
  std::vector<std::pair<std::string, nlohmann::json>> listed;
  DeviceReadings devices;
  for (const auto& inventory : inventories_) {
    auto list = inventory.build(results);
    listed.emplace_back(inventory.name, std::move(list.listed));
    devices.add(list.readings);
  }
  for (const auto& r : results) devices.add(r.devices);
  auto held = held_codes(results);
  std::lock_guard lock(mutex_);
  held_codes_ = std::move(held);
  health_.results = std::move(results);
  health_.devices = std::move(devices);
  health_.sweep_seq = request.seq;
  health_.sweep_ms = took;
  listed_ = std::move(listed);
  last_sweep_ = request.why;
  // Whose step asked for it: `healthctl status` shows the why only to those who may see the job.
  last_sweep_job_ = request.trigger ? std::optional<std::uint32_t>(request.trigger->job_id) : std::nullopt;
  return true;
}

// The responder's part of the status, and the whole handed to on_status_ when anything changed.
void Engine::publish_status(bool changed) {
  auto rs = responder_.status();
  std::optional<NodeHealth> snapshot;
  {
    std::lock_guard lock(mutex_);
    changed = changed || responder_status_ != rs;  // the standing and the pending actions are a part of rs
    responder_status_ = std::move(rs);
    health_.standing = responder_.standing();
    health_.pending_actions = responder_.pending_actions();
    health_.suspicions = responder_.suspicions(std::chrono::system_clock::now());
    health_.stragglers = responder_.stragglers();
    if (changed && on_status_) snapshot = health_;
  }
  if (snapshot) on_status_(*snapshot);
}

}  // namespace ar::healthd
