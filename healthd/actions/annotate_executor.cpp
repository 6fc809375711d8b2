// An annotate entry carried out: the auto-resume line of a job's admin comment (why its attempt
// ended), merged with what else the comment holds. The requeue and the step re-run write the same
// line (annotate_job).
#include "actions/executor.hpp"
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

std::expected<Carried, std::string> carry_out_annotate(const ExecutorServices& services, const JournalEntry& e, WallTime) {
  if (auto c = annotate_job(services.slurm, e.job_id, e.reason); !c) return std::unexpected(c.error());
  return Carried{};  // finished; not an action of its own that hooks follow
}

}  // namespace ar::healthd
