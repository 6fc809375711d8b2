#include "job_registry.hpp"

#include "atomic_file.hpp"
#include "json_fields.hpp"

#include <algorithm>
#include <cstring>

#include <sys/wait.h>
#include <unistd.h>

namespace ar::healthd {

bool JobRecord::auto_resume() const {
  for (const auto& [key, step] : steps)
    if (key.first == restart_count && step.step_id == proto::kBatchStep) return step.auto_resume;
  for (const auto& [key, step] : steps)
    if (key.first == restart_count && step.auto_resume) return true;
  return false;
}

bool JobRecord::batch_here() const {
  for (const auto& [key, step] : steps)
    if (key.first == restart_count && step.step_id == proto::kBatchStep && step.running) return true;
  return false;
}

std::vector<std::uint32_t> JobRecord::running_auto_resume_steps() const {
  std::vector<std::uint32_t> ids;
  for (const auto& [key, step] : steps)
    if (key.first == restart_count && step.running && step.auto_resume && proto::is_user_step(step.step_id))
      ids.push_back(step.step_id);
  return ids;
}

std::vector<TaskStartRecord> JobRecord::running_tasks() const {
  std::vector<TaskStartRecord> tasks;
  for (const auto& [key, step] : steps)
    if (key.first == restart_count && step.running) tasks.insert(tasks.end(), step.tasks.begin(), step.tasks.end());
  return tasks;
}

bool JobRecord::running() const {
  for (const auto& [key, step] : steps)
    if (step.running) return true;
  return false;
}

std::optional<WallClock::time_point> JobRecord::last_activity() const {
  std::optional<WallClock::time_point> last;
  for (const auto& [key, step] : steps) {
    auto t = std::max(step.ended_at.value_or(step.started_at), step.last_exit_at.value_or(step.started_at));
    if (!last || t > *last) last = t;
  }
  return last;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  return "status " + std::to_string(status);
}

StepRecord& JobRegistry::step_for(std::uint32_t job_id, std::uint32_t step_id, WallClock::time_point now) {
  auto& job = jobs_[job_id];
  job.job_id = job_id;
  auto key = std::pair{job.restart_count, step_id};
  auto it = job.steps.find(key);
  if (it == job.steps.end()) {
    // A task exit or step end for a step whose start we never saw (healthd was down then, or the
    // state was lost): keep it rather than drop it, so what we know is still shown.
    StepRecord s;
    s.step_id = step_id;
    s.restart_count = job.restart_count;
    s.started_at = now;
    it = job.steps.emplace(key, s).first;
  }
  return it->second;
}

void JobRegistry::step_started(const proto::StepStart& m, WallClock::time_point now) {
  auto& job = jobs_[m.job_id];
  job.job_id = m.job_id;
  job.uid = m.uid;
  // A step of an older attempt reported late must not roll the job back. A newer attempt means every
  // step of the older ones is over, whether or not their end was reported (a killed node's steps are not).
  if (m.restart_count > job.restart_count) {
    for (auto& [key, step] : job.steps)
      if (key.first < m.restart_count && step.running) {
        step.running = false;
        step.ended_at = now;
      }
  }
  job.restart_count = std::max(job.restart_count, m.restart_count);
  if (m.max_resumes) job.max_resumes = m.max_resumes;
  if (m.heartbeat) job.heartbeat = m.heartbeat;
  StepRecord s;
  s.step_id = m.step_id;
  s.restart_count = m.restart_count;
  s.auto_resume = m.auto_resume;
  s.started_at = now;
  job.steps[{m.restart_count, m.step_id}] = s;
}

bool JobRegistry::correct_restart_count(std::uint32_t job_id, std::uint32_t step_id, std::uint32_t uid,
                                        std::uint32_t restart_count, WallClock::time_point now) {
  const auto job = jobs_.find(job_id);
  if (job == jobs_.end() || job->second.uid != uid || restart_count <= job->second.restart_count) return false;
  const auto step = job->second.steps.find({job->second.restart_count, step_id});
  if (step == job->second.steps.end() || !step->second.running) return false;
  proto::StepStart m;
  m.job_id = job_id;
  m.step_id = step_id;
  m.uid = uid;
  m.auto_resume = step->second.auto_resume;
  m.restart_count = restart_count;
  step_started(m, now);
  return true;
}

void JobRegistry::task_started(const proto::TaskStart& m, WallClock::time_point now) {
  auto& step = step_for(m.job_id, m.step_id, now);
  const TaskStartRecord t{m.task_rank, m.pid};
  if (step.tasks.size() < kMaxTaskExitsPerStep && std::find(step.tasks.begin(), step.tasks.end(), t) == step.tasks.end())
    step.tasks.push_back(t);
}

void JobRegistry::task_exited(const proto::TaskExit& m, WallClock::time_point now) {
  auto& step = step_for(m.job_id, m.step_id, now);
  step.last_exit_at = now;
  if (m.wait_status == 0) ++step.tasks_ok;
  else if (step.task_exits.size() < kMaxTaskExitsPerStep) step.task_exits.push_back({m.task_rank, m.wait_status, now});
  else ++step.failures_not_kept;
}

void JobRegistry::step_ended(const proto::StepEnd& m, WallClock::time_point now) {
  auto& step = step_for(m.job_id, m.step_id, now);
  step.running = false;
  step.ended_at = now;
  // A job running step after step for weeks would otherwise grow the registry (and every write of
  // it) without end: only the newest ended steps are kept, running ones always.
  auto& steps = jobs_.at(m.job_id).steps;
  std::size_t ended = 0;
  for (const auto& [key, s] : steps) ended += s.running ? 0 : 1;
  for (auto it = steps.begin(); ended > kMaxEndedStepsPerJob && it != steps.end();) {
    if (!it->second.running && it->second.step_id < proto::kFirstSpecialStepId) {
      it = steps.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

std::size_t JobRegistry::prune(WallClock::time_point now, std::chrono::seconds retention) {
  std::size_t dropped = 0;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    auto last = it->second.last_activity();
    if (!it->second.running() && (!last || now - *last > retention)) {
      it = jobs_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

namespace {
nlohmann::json job_to_json(std::uint32_t id, const JobRecord& job) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& [key, s] : job.steps) {
    nlohmann::json exits = nlohmann::json::array();
    for (const auto& e : s.task_exits)
      exits.push_back({{"task_rank", e.task_rank}, {"wait_status", e.wait_status},
                       {"description", describe_wait_status(e.wait_status)}, {"at_ms", to_epoch_ms(e.at)}});
    nlohmann::json step = {{"step_id", s.step_id},
                           {"step", proto::step_name(s.step_id)},
                           {"restart_count", s.restart_count},
                           {"auto_resume", s.auto_resume},
                           {"running", s.running},
                           {"started_at_ms", to_epoch_ms(s.started_at)},
                           {"task_exits", exits},
                           {"tasks_ok", s.tasks_ok}};
    if (s.failures_not_kept) step["failures_not_kept"] = s.failures_not_kept;
    if (!s.tasks.empty()) {
      nlohmann::json tasks = nlohmann::json::array();
      for (const auto& t : s.tasks) tasks.push_back({{"task_rank", t.task_rank}, {"pid", t.pid}});
      step["tasks"] = tasks;
    }
    if (s.last_exit_at) step["last_exit_at_ms"] = to_epoch_ms(*s.last_exit_at);
    if (s.ended_at) step["ended_at_ms"] = to_epoch_ms(*s.ended_at);
    steps.push_back(step);
  }
  nlohmann::json jj = {{"job_id", id},
                       {"uid", job.uid},
                       {"restart_count", job.restart_count},
                       {"auto_resume", job.auto_resume()},
                       {"running", job.running()},
                       {"steps", steps}};
  if (job.max_resumes) jj["max_resumes"] = *job.max_resumes;
  if (job.heartbeat) jj["heartbeat"] = proto::to_json(*job.heartbeat);
  return jj;
}
}  // namespace

nlohmann::json JobRegistry::to_json() const {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& [id, job] : jobs_) jobs.push_back(job_to_json(id, job));
  return {{"version", 1}, {"jobs", jobs}};
}

namespace {

// Where in the document a reader failed: "jobs[2].steps[0]: key 'step_id': ...".
template <typename F>
auto at(const std::string& where, F read) {
  try {
    return read();
  } catch (const StateFieldError& e) {
    throw StateFieldError(where + ": " + e.what());
  }
}

StepRecord step_from_json(const nlohmann::json& sj) {
  namespace f = json_fields;
  StepRecord s;
  s.step_id = f::integer<std::uint32_t>(sj, "step_id");
  s.restart_count = f::integer<std::uint32_t>(sj, "restart_count");
  s.auto_resume = f::boolean(sj, "auto_resume");
  s.running = f::boolean(sj, "running");
  s.started_at = f::time_ms(sj, "started_at_ms");
  s.ended_at = f::optional_time_ms(sj, "ended_at_ms");
  const auto& exits = f::array(sj, "task_exits");
  for (std::size_t i = 0; i < exits.size(); ++i) {
    const auto& ej = exits[i];
    TaskExitRecord e = at("task_exits[" + std::to_string(i) + "]", [&] {
      return TaskExitRecord{f::integer<std::uint32_t>(ej, "task_rank"), f::integer<int>(ej, "wait_status"),
                            f::time_ms(ej, "at_ms")};
    });
    // Files written before only failures were kept list successes too: count those.
    if (e.wait_status == 0) ++s.tasks_ok;
    else s.task_exits.push_back(e);
  }
  s.tasks_ok += f::integer_or<std::uint32_t>(sj, "tasks_ok", 0);
  s.failures_not_kept = f::integer_or<std::uint32_t>(sj, "failures_not_kept", 0);
  s.last_exit_at = f::optional_time_ms(sj, "last_exit_at_ms");
  if (sj.contains("tasks")) {
    const auto& tasks = f::array(sj, "tasks");
    for (std::size_t i = 0; i < tasks.size() && s.tasks.size() < kMaxTaskExitsPerStep; ++i)
      s.tasks.push_back(at("tasks[" + std::to_string(i) + "]", [&] {
        return TaskStartRecord{f::integer<std::uint32_t>(tasks[i], "task_rank"), f::integer<std::uint32_t>(tasks[i], "pid")};
      }));
  }
  return s;
}

JobRecord job_from_json(const nlohmann::json& jj) {
  namespace f = json_fields;
  JobRecord job;
  job.job_id = f::integer<std::uint32_t>(jj, "job_id");
  job.uid = f::integer<std::uint32_t>(jj, "uid");
  job.restart_count = f::integer<std::uint32_t>(jj, "restart_count");
  job.max_resumes = f::optional_integer<std::uint32_t>(jj, "max_resumes");
  if (jj.contains("heartbeat")) {
    // Read back as hostile as it came over the socket, with the same checks.
    auto hb = proto::detail::heartbeat_field(jj["heartbeat"]);
    if (!hb) throw StateFieldError(hb.error().message);
    job.heartbeat = std::move(*hb);
  }
  const auto& steps = f::array(jj, "steps");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto s = at("steps[" + std::to_string(i) + "]", [&] { return step_from_json(steps[i]); });
    job.steps[{s.restart_count, s.step_id}] = s;
  }
  return job;
}

}  // namespace

std::expected<std::map<std::uint32_t, JobRecord>, std::string> JobRegistry::from_json(const nlohmann::json& j) {
  std::map<std::uint32_t, JobRecord> out;
  try {
    if (auto version = json_fields::integer<std::int64_t>(j, "version"); version != 1)
      return std::unexpected("unsupported state version " + std::to_string(version));
    const auto& jobs = json_fields::array(j, "jobs");
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto job = at("jobs[" + std::to_string(i) + "]", [&] { return job_from_json(jobs[i]); });
      out[job.job_id] = job;
    }
  } catch (const std::exception& e) {  // StateFieldError, or nlohmann's for a wrong shape
    return std::unexpected(std::string("bad content: ") + e.what());
  }
  return out;
}

std::expected<void, std::string> JobRegistry::load() {
  auto j = read_json_file(state_file_);
  if (!j) return std::unexpected(j.error());
  if (j->is_null()) return {};
  auto jobs = from_json(*j);
  if (!jobs) return std::unexpected(state_file_.string() + ": " + jobs.error());
  jobs_ = std::move(*jobs);
  return {};
}

std::expected<void, std::string> JobRegistry::save() const { return write_file_atomically(state_file_, serialize()); }

std::string JobRegistry::serialize() const {
  // The same document as to_json(), built job by job: a JSON tree of the whole registry costs about
  // ten times the text in memory, and this runs under load.
  std::string text = R"({"version":1,"jobs":[)";
  bool first = true;
  for (const auto& [id, job] : jobs_) {
    if (!first) text += ',';
    first = false;
    text += job_to_json(id, job).dump();
  }
  text += "]}";
  return text;
}

}  // namespace ar::healthd
