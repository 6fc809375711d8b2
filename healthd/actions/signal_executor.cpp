// A signal entry carried out: the job's batch script and steps told to checkpoint now, before a fault
// announced ahead takes the node (at least once, never twice for one attempt).
#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<bool, std::string> SlurmActions::do_signal(const JournalEntry& e, WallTime now) {
  if (journal_.signalled(e.job_id, e.restart_count)) return true;
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;  // gone: nothing to checkpoint
    return std::unexpected(job.error().message);
  }
  owners_[e.job_id] = job->user_id;
  // Requeued or ended meanwhile: the attempt that was to checkpoint is over.
  if (job->restart_count != e.restart_count || job->state != "RUNNING") return true;
  const std::string& signal = e.reason;
  if (auto r = slurm_.signal_job(e.job_id, signal); !r) return std::unexpected(r.error().message);
  acted_ = Action::signal;
  // Marked once sent: a crash before the journal is saved sends it again (at least once, never lost).
  journal_.mark_signalled(e.job_id, e.restart_count);
  spdlog::warn("job {}: SIG{} sent to checkpoint now ({} on {})", e.job_id, signal, e.code, node_);
  timeline_.record(e.job_id, {now, node_, "checkpoint signal",
                              "SIG" + signal + " to the batch script and every step: " + e.code + " on " + node_});
  return true;
}

}  // namespace ar::healthd
