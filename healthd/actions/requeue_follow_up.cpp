#include "actions/requeue_follow_up.hpp"

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "actions/executor.hpp"

namespace ar::healthd {
namespace {

// "2.3 s after the requeue": when `t` came, counted from the requeue at `since`.
std::string after_requeue(WallTime since, WallTime t) {
  char when[64];
  std::snprintf(when, sizeof when, "%.1f s after the requeue", std::chrono::duration<double>(t - since).count());
  return std::string(when);
}

}  // namespace

void RequeueFollowUp::follow(std::uint32_t job_id, std::uint32_t attempt, WallTime now, bool raised_priority) {
  for (auto& f : followed_)
    if (f.job_id == job_id && f.restart_count == attempt) {
      f.raised_priority = f.raised_priority || raised_priority;
      return;
    }
  followed_.push_back({job_id, attempt, now, now, raised_priority});
}

void RequeueFollowUp::nudge(std::uint32_t job_id, std::uint32_t attempt, std::time_t begin) {
  // Once at begin + 0.1 s and at most twice more a second apart (this node's clock may run ahead of
  // slurmctld's).
  nudges_.push_back({job_id, attempt, begin, std::chrono::system_clock::from_time_t(begin) + std::chrono::milliseconds(100), 3});
}

bool RequeueFollowUp::following(std::uint32_t job_id) const {
  return std::any_of(followed_.begin(), followed_.end(), [&](const Followed& f) { return f.job_id == job_id; });
}

std::optional<WallTime> RequeueFollowUp::next_due() const {
  std::optional<WallTime> due;
  for (const auto& f : followed_)
    if (!due || f.next_look < *due) due = f.next_look;
  for (const auto& n : nudges_)
    if (!due || n.at < *due) due = n.at;
  return due;
}

void RequeueFollowUp::look(const ExecutorServices& services, WallTime now) {
  // The scheduler nudges first (see requeue_release): one update each, of a job still waiting.
  std::erase_if(nudges_, [&](Nudge& n) { return now >= n.at && nudge_once(services, n, now); });
  std::erase_if(followed_, [&](Followed& f) { return now >= f.next_look && look_at(services, f, now); });
  // Owners are kept while their job is followed or has an entry pending, for the notices.
  const auto& pending = services.journal.pending();
  std::erase_if(services.owners, [&](const auto& owner) {
    return !following(owner.first) &&
           std::none_of(pending.begin(), pending.end(), [&](const JournalEntry& e) { return e.job_id == owner.first; });
  });
}

bool RequeueFollowUp::nudge_once(const ExecutorServices& services, Nudge& n, WallTime now) {
  auto job = services.slurm.job(n.job_id);
  if (!job) return gone(job.error()) || --n.left <= 0;
  // Any other reason (Priority, Resources): slurmctld has judged it eligible; the queue does the rest.
  if (job->restart_count != n.restart_count || job->state != "PENDING" || job->reason != "BeginTime") return true;
  JobUpdate u;
  u.begin = n.begin;
  if (auto r = services.slurm.update_job(n.job_id, u); !r)
    spdlog::debug("job {}: asking slurmctld to schedule it again: {}", n.job_id, r.error().message);
  n.at = now + std::chrono::seconds(1);
  return --n.left <= 0;
}

// A followed job runs again (since `started`): its timeline and notice say so, and a priority raised
// for its wait goes back to the one Slurm computes.
void RequeueFollowUp::running_again(const ExecutorServices& services, const Followed& f, const JobInfo& job, WallTime started,
                                    WallTime now) {
  services.timeline.record(f.job_id,
                           {started, services.node, "running again", "on " + job.node_list + ", " + after_requeue(f.since, started)});
  JournalEntry about;
  about.node = services.node;
  about.job_id = f.job_id;
  about.restart_count = f.restart_count;
  services.owners[f.job_id] = job.user_id;
  raise_notice(services, NoticeKind::resumed, about, "running again on " + job.node_list + ", " + after_requeue(f.since, started),
               "none", now);
  if (f.raised_priority) {
    // Back to the priority Slurm computes (INFINITE), so a later requeue by anyone else, or the
    // next job of this user, does not inherit the jump.
    JobUpdate u;
    u.reset_priority = true;
    if (auto r = services.slurm.update_job(f.job_id, u); !r && !gone(r.error()))
      spdlog::warn("job {}: its top priority could not be set back: {}", f.job_id, r.error().message);
  }
}

bool RequeueFollowUp::look_at(const ExecutorServices& services, Followed& f, WallTime now) {
  const auto waited = now - f.since;
  // The start time comes from Slurm itself, so looking often buys nothing: once a second while a
  // restart is expected (seconds), then every 5 s, then every 30 s. Following one job for its ten
  // minutes costs about 40 Slurm reads.
  f.next_look = now + (waited < std::chrono::seconds(10)   ? std::chrono::milliseconds(1000)
                       : waited < std::chrono::seconds(60) ? std::chrono::milliseconds(5000)
                                                           : std::chrono::milliseconds(30000));
  auto job = services.slurm.job(f.job_id);
  if (!job) return gone(job.error()) || waited > std::chrono::minutes(10);
  if (job->restart_count < f.restart_count) return waited > std::chrono::minutes(10);
  // start_time is slurmctld's, in whole seconds: one within the second before the requeue is this run.
  const bool started_since = job->start_time >= f.since - std::chrono::seconds(1);
  // COMPLETING is a run only when the run ended (a short attempt between two looks): a requeued job
  // whose last attempt is still ending is PENDING underneath, with the scheduler's expected start in
  // start_time (seen at 128 nodes: "running again" 4 s before it did, and its node returned early).
  const bool ran = job->state == "RUNNING" || job->state == "CONFIGURING" ||
                   (job->state == "COMPLETING" && !job->pending && started_since);
  if (ran) {
    running_again(services, f, *job, started_since ? std::max(job->start_time, f.since) : std::chrono::system_clock::now(), now);
    return true;
  }
  if (job->state == "PENDING" || job->state == "COMPLETING" || job->state == "REQUEUED") {
    if (waited > std::chrono::minutes(10)) {
      services.timeline.record(f.job_id, {std::chrono::system_clock::now(), services.node, "not running again",
                                          "still " + job->state + " (" + job->reason +
                                              ") 10 minutes after the requeue; no longer followed" +
                                              (f.raised_priority ? "; it keeps its top priority until it runs" : "")});
      return true;
    }
    return false;
  }
  // Ended without healthd seeing it run again (it may have run briefly between two looks).
  const auto ended = std::chrono::system_clock::now();
  services.timeline.record(f.job_id, {ended, services.node, "ended",
                                      job->state + (job->node_list.empty() ? "" : " on " + job->node_list) + ", " +
                                          after_requeue(f.since, ended) + ", without being seen running again"});
  return true;
}

}  // namespace ar::healthd
