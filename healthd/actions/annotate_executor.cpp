// An annotate entry carried out: the auto-resume line of a job's admin comment (why its attempt
// ended), merged with what else the comment holds. The requeue and the step re-run write the same
// line (annotate_job).
#include "actions/executor.hpp"
#include <algorithm>
#include <functional>

#include "auto_resume/job_comment.hpp"

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

// A node's evidence about a stalled job (engine/rank_evidence.hpp). The nodes of the job write theirs
// at about the same moment, each a read and a whole-field write of the admin comment, so one may
// overwrite another's line: each reads the comment back, and writes again (after a wait that differs
// from node to node) until its line is there. A comment that holds more evidence lines than could
// ever name suspects (more than half the job's nodes) has said enough: no more is written.
std::expected<Carried, std::string> carry_out_evidence(const ExecutorServices& services, const JournalEntry& e,
                                                       const EvidenceLine& ours, WallTime now) {
  auto job = services.slurm.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return Carried{};
    return std::unexpected(job.error().message);
  }
  if (job->restart_count != e.restart_count || !job->state.starts_with("RUNNING")) return Carried{};  // that attempt is over
  const auto lines = evidence_lines(job->admin_comment, ours.attempt);
  const bool landed = std::any_of(lines.begin(), lines.end(), [&](const EvidenceLine& l) { return l.node == ours.node; });
  if (landed) return Carried{};
  if (e.waits >= kEvidenceTries || lines.size() > job->nodes.size() / 2) return Carried{};
  if (auto c = annotate_job(services.slurm, e.job_id, e.reason, job->admin_comment); !c) return std::unexpected(c.error());
  const auto spread = std::chrono::milliseconds(100 + 37 * static_cast<long>(std::hash<std::string>{}(services.node) % 11));
  services.journal.wait_until(e.id, now + spread, "reading back the stall evidence of job " + std::to_string(e.job_id));
  return Carried{.finished = false};
}

}  // namespace

std::expected<Carried, std::string> carry_out_annotate(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  if (auto ours = parse_evidence_line(e.reason)) return carry_out_evidence(services, e, *ours, now);
  if (auto c = annotate_job(services.slurm, e.job_id, e.reason); !c) return std::unexpected(c.error());
  return Carried{};  // finished; not an action of its own that hooks follow
}

}  // namespace ar::healthd
