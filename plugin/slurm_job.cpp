#include "slurm_job.hpp"

#include <cstdlib>

#include "auto_resume/slurm_series.hpp"

namespace ar::plugin {
namespace {

// SHOW_LOCAL: this cluster's record only, which is where a job running here lives; without it
// libslurm first asks slurmctld for the federation (REQUEST_FED_INFO), one more RPC per read.
constexpr std::uint16_t kJobRead = SHOW_DETAIL | SHOW_LOCAL;

std::string text(const char* s) { return s == nullptr ? std::string() : std::string(s); }

}  // namespace

std::optional<JobFacts> read_job(std::uint32_t job_id) {
  job_info_msg_t* info = nullptr;
  if (ar::slurm_series::load_job(&info, job_id, kJobRead) != 0 || info == nullptr) return std::nullopt;
  std::optional<JobFacts> facts;
  if (info->record_count > 0) {
    const auto& j = info->job_array[0];
    facts = JobFacts{j.restart_cnt,           text(j.batch_host), text(j.nodes),   j.num_nodes,
                     text(j.admin_comment), j.batch_flag != 0,   j.requeue != 0};
  }
  slurm_free_job_info_msg(info);
  return facts;
}

}  // namespace ar::plugin
