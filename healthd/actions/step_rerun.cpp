// Step re-run inside the allocation: a fault under an auto-resume srun step of a batch job takes the
// faulty node (and every other node of the job Slurm already has drained) out of the job with
// `scontrol update NodeList=`-style shrinking, says so in the job's admin comment, and kills the step.
// The plugin in that srun reads the comment when the step has ended and runs the same srun again on
// the nodes left (plugin/step_rerun.cpp): no requeue, no wait in the queue, the allocation kept.
//
// The order is what makes it safe: the comment first (an srun that ends for any reason after it
// finds it), the shrink next (the re-run cannot land on the fault), the kill last (the srun ends only
// now). Each call looks at Slurm's state first, so a daemon killed between two of them does the rest
// after its restart, and several faulty nodes of one step give one re-run: the first writes the line,
// the others find it and only leave the job.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/step_rerun.hpp"
#include "auto_resume/job_comment.hpp"
#include "auto_resume/protocol.hpp"

namespace ar::healthd {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

// The re-run line another node's healthd (or this one, before a restart) wrote for this very step
// of this attempt, if any.
std::optional<AttemptEnd> rerun_line(const JournalEntry& e, const JobInfo& job) {
  auto last = parse_attempt_comment(auto_resume_line(job.admin_comment));
  if (!e.rerun_step || job.restart_count != e.restart_count || !asks_step_rerun(last, *e.rerun_step, job.restart_count))
    return std::nullopt;
  return last;
}

// Another node's healthd re-ran the step for this same failure (or this daemon did, before a restart):
// this node only has to be out of the job. When a step of the job runs on it by now (the re-run
// landed here before this node was drained), leaving would kill the re-run: the job is requeued
// instead, as it is when the nodes left no longer cover the step.
std::expected<std::optional<std::string>, std::string> leave_rerun(const ExecutorServices& services, const JournalEntry& e,
                                                                   const JobInfo& job, std::uint32_t need, WallTime now) {
  const std::string& node = services.node;
  using Why = std::optional<std::string>;
  const std::string step_name = std::to_string(e.job_id) + "." + std::to_string(*e.rerun_step);
  if (has(job.nodes, node)) {
    std::vector<std::string> left;
    for (const auto& n : job.nodes)
      if (n != node) left.push_back(n);
    if (left.size() < need)
      return Why("after the re-run of step " + step_name + ", " + std::to_string(left.size()) +
                 " nodes would be left for its " + std::to_string(need));
    JobUpdate u;
    u.nodes = left;
    if (auto r = services.slurm.update_job(e.job_id, u); !r) {
      if (gone(r.error())) return Why("the job has ended");
      return std::unexpected("taking " + node + " out of job " + std::to_string(e.job_id) + ": " + r.error().message);
    }
  }
  if (auto r = services.slurm.kill_step(e.job_id, *e.rerun_step); !r && !gone(r.error())) return std::unexpected(r.error().message);
  services.journal.mark_requeued(e.job_id, e.restart_count);
  services.timeline.record(e.job_id, {now, node, "step re-run elsewhere",
                              "step " + step_name + " was re-run for this failure already; " + node + " is out of the job"});
  return Why();
}

}  // namespace

std::uint32_t step_reruns_so_far(const JobInfo& job) {
  auto last = parse_attempt_comment(auto_resume_line(job.admin_comment));
  return last ? last->reruns : 0;
}

std::expected<std::optional<std::string>, std::string> rerun_step(const ExecutorServices& services, const JournalEntry& e,
                                                                  const JobInfo& job, WallTime now) {
  const std::string& node = services.node;
  using Why = std::optional<std::string>;
  if (!e.rerun_step || !services.policy.step_rerun) return Why(std::string());
  if (!job.batch) return Why("not a batch job: a step is re-run only by the srun of a batch script");
  if (job.heterogeneous) return Why("a heterogeneous job: its components' steps are not re-run one by one");
  if (job.state != "RUNNING") return Why("the job is " + job.state);
  if (job.batch_host == node) return Why("its batch script runs on " + node + ", which cannot leave the job");
  const std::uint32_t step = *e.rerun_step;
  const std::string step_name = std::to_string(e.job_id) + "." + std::to_string(step);

  auto steps = services.slurm.job_steps(e.job_id);
  if (!steps) return std::unexpected(steps.error().message);
  const StepInfo* failed = nullptr;
  for (const auto& s : *steps) {
    if (!proto::is_user_step(s.step_id)) continue;
    if (s.step_id == step) failed = &s;
    else if (has(s.nodes, node))
      return Why("step " + std::to_string(e.job_id) + "." + std::to_string(s.step_id) + " also runs on " + node +
                 ": a step is re-run only where it is the job's one step on the node");
  }
  if (auto line = rerun_line(e, job)) return leave_rerun(services, e, job, line->rerun_nodes, now);
  if (failed == nullptr) return Why("step " + step_name + " has ended, so no srun is left to run it again");
  const auto need = static_cast<std::uint32_t>(failed->nodes.size());

  // The nodes that stay: all but this one and any other of the job that Slurm has drained (their
  // own healthd is about to act on them; a re-run landing there would fail again).
  std::vector<std::string> out{node};
  if (!job.partition.empty())
    if (auto nodes = services.slurm.node_table())
      for (const auto& n : *nodes)
        if (n.name != node && n.drained_or_draining() && has(job.nodes, n.name)) out.push_back(n.name);
  std::vector<std::string> left;
  for (const auto& n : job.nodes)
    if (!has(out, n)) left.push_back(n);
  if (left.size() < need)
    return Why(std::to_string(left.size()) + " healthy node" + (left.size() == 1 ? "" : "s") + " left in the job (" +
               (left.empty() ? "none" : joined(left)) + "), step " + step_name + " needs " + std::to_string(need));

  // 1. The line the srun reads (and the restarted job, should it come to a requeue after all).
  const std::uint32_t reruns = step_reruns_so_far(job) + 1;
  AttemptEnd line{job.restart_count + reruns, e.code, node, e.reason, step, need, reruns};
  if (auto r = annotate_job(services.slurm, e.job_id, format_attempt_comment(line), job.admin_comment); !r) return std::unexpected(r.error());
  // 2. The faulty nodes leave; slurmctld kills their tasks of every step.
  JobUpdate u;
  u.nodes = left;
  if (auto r = services.slurm.update_job(e.job_id, u); !r) {
    if (gone(r.error())) return Why("the job has ended");
    return std::unexpected("taking " + joined(out) + " out of job " + std::to_string(e.job_id) + ": " + r.error().message);
  }
  // 3. The step ends everywhere now, so its srun starts the re-run.
  if (auto r = services.slurm.kill_step(e.job_id, step); !r && !gone(r.error())) return std::unexpected(r.error().message);
  services.journal.mark_requeued(e.job_id, e.restart_count);  // decided: this node is out of the job
  const std::string what = "step " + step_name + " runs again on " + joined(left) + " (" + std::to_string(left.size()) +
                           " nodes, re-run " + std::to_string(reruns) + " of the job) after " + e.code + " on " + node +
                           "; " + joined(out) + " left the job";
  spdlog::warn("job {}: {}", e.job_id, what);
  services.timeline.record(e.job_id, {std::chrono::system_clock::now(), node, "step re-run", what});
  raise_notice(services, NoticeKind::requeue, e, what, "rerun", now);
  return Why();
}

}  // namespace ar::healthd
