// An annotate entry carried out: the auto-resume line of a job's admin comment (why its attempt
// ended), merged with what else the comment holds. The requeue writes the same line (annotate()).
#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "auto_resume/job_comment.hpp"

namespace ar::healthd {

std::expected<bool, std::string> SlurmActions::do_annotate(const JournalEntry& e, WallTime) {
  auto c = annotate(e.job_id, e.reason);
  if (!c) return std::unexpected(c.error());
  return true;
}

std::expected<void, std::string> SlurmActions::annotate(std::uint32_t job_id, const std::string& line,
                                                     const std::optional<std::string>& current) {
  std::string existing;
  if (current) {
    existing = *current;
  } else {
    auto job = slurm_.job(job_id);
    if (!job) {
      if (gone(job.error())) return {};  // nothing left to say it to
      return std::unexpected(job.error().message);
    }
    existing = job->admin_comment;
  }
  JobUpdate u;
  u.admin_comment = merge_admin_comment(existing, line);
  if (auto r = slurm_.update_job(job_id, u); !r && !gone(r.error())) return std::unexpected("admin comment: " + r.error().message);
  return {};
}

}  // namespace ar::healthd
