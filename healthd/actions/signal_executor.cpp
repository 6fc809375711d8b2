// A signal entry carried out: the job's batch script and steps told to checkpoint now, before a fault
// announced ahead takes the node (at least once, never twice for one attempt).
#include <spdlog/spdlog.h>

#include "actions/executor.hpp"

namespace ar::healthd {

std::expected<Carried, std::string> carry_out_signal(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  if (services.journal.signalled(e.job_id, e.restart_count)) return Carried{};
  auto job = services.slurm.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return Carried{};  // gone: nothing to checkpoint
    return std::unexpected(job.error().message);
  }
  services.owners[e.job_id] = job->user_id;
  // Requeued or ended meanwhile: the attempt that was to checkpoint is over.
  if (job->restart_count != e.restart_count || job->state != "RUNNING") return Carried{};
  const std::string& signal = e.reason;
  if (auto r = services.slurm.signal_job(e.job_id, signal); !r) return std::unexpected(r.error().message);
  // Marked once sent: a crash before the journal is saved sends it again (at least once, never lost).
  services.journal.mark_signalled(e.job_id, e.restart_count);
  spdlog::warn("job {}: SIG{} sent to checkpoint now ({} on {})", e.job_id, signal, e.code, services.node);
  services.timeline.record(e.job_id, {now, services.node, "checkpoint signal",
                                      "SIG" + signal + " to the batch script and every step: " + e.code + " on " + services.node});
  return Carried{.acted = Action::signal};
}

}  // namespace ar::healthd
