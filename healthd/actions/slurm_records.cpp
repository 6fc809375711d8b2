#include "slurm_records.hpp"

#include <array>
#include <cstdlib>
#include <sstream>

#include "auto_resume/slurm_series.hpp"

namespace ar::healthd {
namespace {

std::string text(const char* s) { return s == nullptr ? std::string() : std::string(s); }

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// libslurm 22.05 exports job_state_string() and friends but declares none of them in slurm.h, so the
// names are rendered here from the typed fields, in scontrol's words and precedence (a flag such as
// COMPLETING names the state before the base state does).
std::string job_state_name(std::uint32_t state) {
  if (state & JOB_COMPLETING) return "COMPLETING";
  if (state & JOB_CONFIGURING) return "CONFIGURING";
  if (state & JOB_REQUEUE) return "REQUEUED";
  static constexpr std::array<const char*, JOB_END> kBase = {
      "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
      "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"};
  const auto base = state & JOB_STATE_BASE;
  return base < kBase.size() ? kBase[base] : "UNKNOWN(" + std::to_string(base) + ")";
}

// The pending reasons healthd's messages mention; any other by its number.
std::string job_reason_name(std::uint16_t reason) {
  switch (reason) {
    case WAIT_NO_REASON: return "None";
    case WAIT_PRIORITY: return "Priority";
    case WAIT_DEPENDENCY: return "Dependency";
    case WAIT_RESOURCES: return "Resources";
    case WAIT_TIME: return "BeginTime";
    case WAIT_HELD: return "JobHeldAdmin";
    case WAIT_HELD_USER: return "JobHeldUser";
    case WAIT_NODE_NOT_AVAIL: return "ReqNodeNotAvail";
    default: return "reason " + std::to_string(reason);
  }
}

std::string node_state_name(std::uint32_t state) {
  static constexpr std::array<const char*, NODE_STATE_END> kBase = {"UNKNOWN", "DOWN",  "IDLE",  "ALLOCATED",
                                                                    "ERROR",   "MIXED", "FUTURE"};
  const auto base = state & NODE_STATE_BASE;
  std::string s = base < kBase.size() ? kBase[base] : "UNKNOWN";
  if (state & NODE_STATE_DRAIN) s += "+DRAIN";
  if (state & NODE_STATE_REBOOT_REQUESTED) s += "+REBOOT_REQUESTED";
  if (state & NODE_STATE_REBOOT_ISSUED) s += "+REBOOT_ISSUED";
  if (state & NODE_STATE_NO_RESPOND) s += "+NOT_RESPONDING";
  return s;
}

}  // namespace

NodeInfo to_node_info(const node_info_t& node) {
  NodeInfo n;
  n.name = text(node.name);
  n.state = node_state_name(node.node_state);
  n.reason = text(node.reason);
  n.partitions = split_commas(text(node.partitions));
  n.drain = (node.node_state & NODE_STATE_DRAIN) != 0;
  n.reboot = (node.node_state & (NODE_STATE_REBOOT_REQUESTED | NODE_STATE_REBOOT_ISSUED)) != 0;
  n.reboot_issued = (node.node_state & NODE_STATE_REBOOT_ISSUED) != 0;
  n.reason_time = node.reason_time;
  n.down = (node.node_state & NODE_STATE_BASE) == NODE_STATE_DOWN || (node.node_state & NODE_STATE_NO_RESPOND) != 0;
  return n;
}

JobInfo to_job_info(const slurm_job_info_t& job) {
  JobInfo j;
  j.job_id = job.job_id;
  j.state = job_state_name(job.job_state);
  j.pending = (job.job_state & JOB_STATE_BASE) == JOB_PENDING;
  j.reason = job_reason_name(job.state_reason);
  j.restart_count = job.restart_cnt;
  j.user_id = job.user_id;
  j.node_list = text(job.nodes);
  j.comment = text(job.comment);
  j.admin_comment = text(job.admin_comment);
  j.requeue = job.requeue != 0;
  j.priority = job.priority;
  j.start_time = std::chrono::system_clock::from_time_t(job.start_time);
  j.submit_time = std::chrono::system_clock::from_time_t(job.submit_time);
  j.batch = job.batch_flag != 0;
  j.batch_host = text(job.batch_host);
  j.heterogeneous = job.het_job_id != 0 && job.het_job_id != NO_VAL;
  j.partition = text(job.partition);
  j.nodes = expand_hostlist(j.node_list);
  j.excluded = expand_hostlist(text(job.exc_nodes));
  j.required = expand_hostlist(text(job.req_nodes));
  return j;
}

StepInfo to_step_info(const job_step_info_t& step) {
  return StepInfo{step.step_id.step_id, expand_hostlist(text(step.nodes))};
}

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> names;
  if (list.empty()) return names;
  slurm_series::HostList hosts(list);
  while (auto name = hosts.shift()) names.push_back(std::move(*name));
  return names;
}

}  // namespace ar::healthd
