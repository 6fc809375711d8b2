// An annotate entry carried out: the auto-resume line of a job's admin comment (why its attempt
// ended), merged with what else the comment holds. The requeue and the step re-run write the same
// line (annotate_job).
#include "actions/executor.hpp"
#include <algorithm>
#include <functional>

#include <spdlog/spdlog.h>

#include "auto_resume/job_comment.hpp"
#include "policy/suspect_policy.hpp"
#include "text/text.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd {

std::expected<void, std::string> annotate_job(SlurmClient& slurm, std::uint32_t job_id, const std::string& line,
                                              const std::optional<std::string>& current) {
  std::string existing;
  if (current) {
    existing = *current;
  } else {
    auto job = slurm.job(job_id);
    if (!job) {
      if (gone(job.error())) return {};  // nothing left to say it to
      return std::unexpected(job.error().message);
    }
    existing = job->admin_comment;
  }
  JobUpdate u;
  u.admin_comment = merge_admin_comment(existing, line);
  if (auto r = slurm.update_job(job_id, u); !r && !gone(r.error())) return std::unexpected("admin comment: " + r.error().message);
  return {};
}

namespace {

// At most this many tries to see a node's evidence line land (each after a wait).
constexpr std::uint32_t kEvidenceTries = 8;
// How many check intervals a node whose evidence landed waits for the stall's decision (the
// attempt's end) before it stops asking: a stall called off leaves the attempt running.
constexpr std::uint32_t kDecisionWaits = 120;

// This node was named the suspect of a stalled job: kept (the journal saves it), and the lemon rule
// asked. A lemon is drained as healthd drains a faulty node (max_drained_share, report_only and an
// admin's resume hold as for any drain) and returns once the deep check passes.
void keep_suspicion(const ExecutorServices& services, const JournalEntry& e, const JobInfo& job, const EvidenceLine& ours,
                    const SuspectsLine& verdict, WallTime now) {
  auto& kept = services.journal.suspicions();
  kept.push_back({now, e.job_id, job.user_id, ours.text});
  if (kept.size() > kMaxSuspicions) kept.erase(kept.begin());
  services.timeline.record(e.job_id, {now, services.node, "suspected",
                                      "named the suspect of attempt " + std::to_string(ours.attempt) + "'s stall: " + verdict.why});
  const auto lemon = policy::judge_lemon(kept, services.policy, now);
  spdlog::warn("node {}: named the suspect of job {}'s stall ({}); {} (jobs {})", services.node, e.job_id, verdict.why,
               lemon.why, lemon.jobs);
  if (lemon.drain) {
    const bool deep_check = !services.policy.cure.deep_check.empty();
    const std::string reason = sanitize(std::string(kReasonPrefix) + " " + kSuspectLemon + ": " + lemon.why + " (jobs " + lemon.jobs + ")" +
                                            (deep_check ? "; drained for the deep check" : "; no deep check set: held for an admin"),
                                        240);
    if (services.policy.report_only) {
      spdlog::warn("report only: would drain node {} ({}); nothing done", services.node, reason);
    } else {
      JournalEntry drain = due_entry(Action::drain, services.node, kSuspectLemon, now);
      drain.reason = reason;
      drain.held = !deep_check;
      drain.cure = CureProgress{};
      drain.cure->since = now;
      if (auto r = services.journal.add(std::move(drain)); !r) spdlog::error("journal: {}", r.error());
      kept.clear();  // they led to this drain: the node starts afresh once it has proved itself
    }
  }
  if (auto r = services.journal.save(); !r) spdlog::error("journal: {}", r.error());
}

// A node's evidence about a stalled job (engine/rank_evidence.hpp). The nodes of the job write theirs
// at about the same moment, each a read and a whole-field write of the admin comment, so one may
// overwrite another's line: each reads the comment back, and writes again (after a wait that differs
// from node to node) until its line is there. A comment that holds more evidence lines than could
// ever name suspects (policy::most_suspects) has said enough: no more is written. Once its
// line is there, the node waits for the attempt to end and reads whether it was named the suspect.
std::expected<Carried, std::string> carry_out_evidence(const ExecutorServices& services, const JournalEntry& e,
                                                       const EvidenceLine& ours, WallTime now) {
  auto job = services.slurm.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return Carried{};
    return std::unexpected(job.error().message);
  }
  const auto lines = evidence_lines(job->admin_comment, ours.attempt);
  const bool landed = std::any_of(lines.begin(), lines.end(), [&](const EvidenceLine& l) { return l.node == ours.node; });
  if (job->restart_count == e.restart_count && job->state == "RUNNING") {
    if (!landed) {
      if (e.waits >= kEvidenceTries || lines.size() > policy::most_suspects(job->nodes.size(), services.policy.suspect_max_share))
        return Carried{};
      if (auto c = annotate_job(services.slurm, e.job_id, e.reason, job->admin_comment); !c) return std::unexpected(c.error());
      const auto spread = std::chrono::milliseconds(100 + 37 * static_cast<long>(std::hash<std::string>{}(services.node) % 11));
      services.journal.wait_until(e.id, now + spread, "reading back the stall evidence of job " + std::to_string(e.job_id));
      return Carried{.finished = false};
    }
    if (e.waits >= kDecisionWaits) return Carried{};
    services.journal.wait_until(e.id, now + services.policy.check_interval,
                                "waiting for the decision on job " + std::to_string(e.job_id) + "'s stall");
    return Carried{.finished = false};
  }
  // The attempt is over (requeued, or ended): named or not.
  const auto verdict = suspects_line(job->admin_comment, ours.attempt);
  if (landed && verdict && has(verdict->nodes, services.node)) keep_suspicion(services, e, *job, ours, *verdict, now);
  return Carried{};
}

}  // namespace

std::expected<Carried, std::string> carry_out_annotate(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  if (auto ours = parse_evidence_line(e.reason)) return carry_out_evidence(services, e, *ours, now);
  if (auto c = annotate_job(services.slurm, e.job_id, e.reason); !c) return std::unexpected(c.error());
  return Carried{};  // finished; not an action of its own that hooks follow
}

}  // namespace ar::healthd
