// The responder's part in stragglers (engine/straggler_watch.hpp judges; this says and acts): a
// report once an attempt (log, timeline, notice, the status and the metric while it lasts) and,
// under [policy] straggler_action = "exclude", a requeue without this node once the job's next
// checkpoint is complete, so no step of work is lost to it.
#include <set>

#include <spdlog/spdlog.h>

#include "engine/responder.hpp"
#include "policy/fault_policy.hpp"
#include "text/text.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd {

void Responder::watch_stragglers(const std::vector<LocalJob>& jobs, const std::vector<CheckResult>& results, WallTime now) {
  std::set<std::uint32_t> watched;
  const auto t = stall_clock_();
  for (const auto& job : jobs) {
    if (!job.auto_resume || !job.heartbeat || !job.heartbeat->per_rank || job.tasks.empty()) continue;
    watched.insert(job.job_id);
    std::vector<std::uint32_t> mine;
    for (const auto& task : job.tasks) mine.push_back(task.rank);
    straggler_watch_.observe(job.job_id, job.restart_count, stall_watch_.steps_of(job.job_id), mine,
                             policy_.straggler_window, t);
    const auto finding =
        straggler_watch_.judge(job.job_id, mine, policy_.straggler_share, policy_.straggler_window, t);
    auto it = straggling_.find(job.job_id);
    if (it != straggling_.end() && it->second.restart_count != job.restart_count) {
      straggling_.erase(it);  // a new attempt: judged afresh, wherever it runs
      it = straggling_.end();
    }
    if (!finding) {
      // Back within the share: said, and nothing more is done (a requeue already asked goes on).
      if (it != straggling_.end() && !it->second.requeue_asked) {
        timeline_.record(job.job_id, {now, node_, "straggler no more", "ranks on " + node_ + " keep up with the job again"});
        straggling_.erase(it);
      }
      continue;
    }
    if (it == straggling_.end()) {
      const std::string message =
          fault_message_text("ranks on " + node_ + " straggle: " + finding->text() + "; checks: " + what_checks_say(results));
      it = straggling_.emplace(job.job_id, Straggling{job.restart_count, message}).first;
      report_straggler(*finding, job, message, now);
    }
    if (policy_.straggler_action == StragglerAction::exclude && !it->second.requeue_asked) exclude_at_checkpoint(job, now);
  }
  straggler_watch_.keep_only(watched);
  std::erase_if(straggling_, [&](const auto& kv) { return !watched.contains(kv.first); });
}

void Responder::report_straggler(const StragglerFinding& f, const LocalJob& job, const std::string& message, WallTime now) {
  const bool excludes = policy_.straggler_action == StragglerAction::exclude;
  const bool has_checkpoints = !job.heartbeat->checkpoint_dir.empty();
  spdlog::warn("job {}: {}", job.job_id, message);
  timeline_.record(job.job_id, {now, node_, "straggler", message});
  if (excludes && !has_checkpoints)
    timeline_.record(job.job_id, {now, node_, "straggler: reported only",
                                  "[policy] straggler_action = \"exclude\" waits for the job's next complete checkpoint, "
                                  "and this job names no --auto-resume-checkpoint-dir"});
  else if (excludes)
    timeline_.record(job.job_id, {now, node_, "straggler: exclude at checkpoint",
                                  "requeued without " + node_ + " once the next checkpoint in " +
                                      job.heartbeat->checkpoint_dir + " is complete"});
  if (notices_ == nullptr) return;
  Notice n;
  n.kind = NoticeKind::straggler;
  n.at = now;
  n.node = node_;
  n.job_id = job.job_id;
  n.uid = job.uid;
  n.attempt = f.restart_count;
  n.code = kStraggler;
  n.message = message;
  n.action = policy_.report_only ? "report only" : excludes && has_checkpoints ? "exclude" : "report";
  notices_->notify(n);
}

void Responder::exclude_at_checkpoint(const LocalJob& job, WallTime now) {
  auto& s = straggling_.at(job.job_id);
  if (job.heartbeat->checkpoint_dir.empty() || !job.uid) return;
  // Read like the heartbeat: with the owner's rights, bounded; not read: asked again next sweep.
  const auto reading = heartbeat_reader_(job.heartbeat->checkpoint_dir, *job.uid);
  if (!reading.error.empty()) return;
  if (!s.checkpoint_read) {
    s.checkpoint_read = true;
    s.checkpoint_before = reading.newest_complete;
    return;
  }
  if (!reading.newest_complete || (s.checkpoint_before && *reading.newest_complete <= *s.checkpoint_before)) return;
  s.requeue_asked = true;
  timeline_.record(job.job_id, {now, node_, "checkpoint complete",
                                "a new checkpoint in " + job.heartbeat->checkpoint_dir + ": requeued without " + node_});
  queue_requeue(at_fault(job.job_id, job.restart_count, true, job.max_resumes, {}), kStraggler, s.message, now);
}

}  // namespace ar::healthd
