#include "engine/rank_evidence.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace ar::healthd {
namespace {

// Below this share of one core over the window a task counts as not running at all: a busy-waiting
// rank (NCCL, MPI) uses a whole core, a computing one more; a blocked one only its timer ticks.
constexpr double kIdleCpuShare = 0.01;
// A GPU at most this busy is idle; the job's others here at least kBusyGpuPct are busy.
constexpr unsigned kIdleGpuPct = 0;
constexpr unsigned kBusyGpuPct = 50;

bool holds(const GpuActivity& gpu, const std::vector<std::uint32_t>& pids) {
  return std::any_of(gpu.pids.begin(), gpu.pids.end(),
                     [&](unsigned p) { return std::find(pids.begin(), pids.end(), p) != pids.end(); });
}

// The GPUs a task of the job holds, by index.
std::map<unsigned, const GpuActivity*> gpus_of(const std::vector<GpuActivity>& gpus, const std::vector<std::uint32_t>& pids) {
  std::map<unsigned, const GpuActivity*> out;
  for (const auto& g : gpus)
    if (holds(g, pids)) out[g.index] = &g;
  return out;
}

}  // namespace

void TaskSampler::look(const std::vector<LocalTask>& tasks, StallClock::time_point now) {
  std::set<std::uint32_t> listed;
  for (const auto& t : tasks) {
    listed.insert(t.pid);
    Seen& seen = by_pid_[t.pid];
    const auto sample = sample_process_tree(proc_root_, t.pid, seen.start_ticks);
    if (sample.found && seen.start_ticks == 0) seen.start_ticks = sample.start_ticks;
    seen.looks.push_back({now, sample.found, sample.cpu_s, !sample.uninterruptible.empty(), sample.pids});
    if (seen.looks.size() > kMaxLooks) seen.looks.erase(seen.looks.begin());
  }
  std::erase_if(by_pid_, [&](const auto& kv) { return !listed.contains(kv.first); });
}

std::vector<TaskActivity> TaskSampler::activity(const std::vector<LocalTask>& tasks, std::chrono::seconds window) const {
  std::vector<TaskActivity> out;
  for (const auto& t : tasks) {
    TaskActivity a{t.rank, t.pid, false, 0, 0, false};
    auto it = by_pid_.find(t.pid);
    if (it != by_pid_.end() && !it->second.looks.empty()) {
      const auto& looks = it->second.looks;
      const Look& last = looks.back();
      a.found = last.found;
      a.pids = last.pids;
      a.uninterruptible = last.uninterruptible && looks.size() >= 2 && looks[looks.size() - 2].uninterruptible;
      // The oldest look still inside the window (or the oldest there is), of the same process.
      const Look* first = &last;
      for (auto l = looks.rbegin(); l != looks.rend(); ++l) {
        if (!l->found) break;
        first = &*l;
        if (last.at - l->at >= window) break;
      }
      if (last.found) {
        a.cpu_s = std::max(0.0, last.cpu_s - first->cpu_s);
        a.window_s = std::chrono::duration<double>(last.at - first->at).count();
      }
    }
    out.push_back(a);
  }
  return out;
}

std::chrono::seconds behind_limit(std::chrono::seconds stall) { return std::max(std::chrono::seconds(2), stall / 4); }

std::string RankEvidence::text() const {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : "; ") + i;
  return s;
}

RankEvidence judge_ranks(const std::map<std::uint32_t, FileTime>& ranks, const std::vector<TaskActivity>& tasks,
                         std::chrono::seconds stall, const std::vector<GpuActivity>& gpus) {
  RankEvidence e;
  // Every GPU a task of this job holds here, and the busiest of them.
  std::map<unsigned, const GpuActivity*> job_gpus;
  for (const auto& t : tasks)
    if (t.found) job_gpus.merge(gpus_of(gpus, t.pids));
  std::optional<FileTime> newest;
  for (const auto& [rank, at] : ranks) newest = newest ? std::max(*newest, at) : at;
  const auto behind = behind_limit(stall);
  std::set<std::uint32_t> said;
  for (const auto& t : tasks) {
    if (!said.insert(t.rank).second) continue;
    const std::string who = "rank " + std::to_string(t.rank);
    if (newest) {
      auto it = ranks.find(t.rank);
      if (it == ranks.end()) {
        e.items.push_back(who + ": never beat while other ranks did");
        e.points_here = true;
      } else if (*newest - it->second >= behind) {
        const auto lag = std::chrono::duration_cast<std::chrono::seconds>(*newest - it->second);
        e.items.push_back(who + ": stopped first (last beat " + std::to_string(lag.count()) +
                          " s before the job's newest)");
        e.points_here = true;
      }
    }
    if (!t.found) {
      e.items.push_back(who + ": task " + std::to_string(t.pid) + " has ended");
      continue;
    }
    if (t.uninterruptible) {
      e.items.push_back(who + ": task " + std::to_string(t.pid) + " in uninterruptible sleep (D)");
      e.points_here = true;
    }
    if (t.window_s >= 1.0) {
      if (t.cpu_s < kIdleCpuShare * t.window_s) {
        e.items.push_back(fmt::format("{}: CPU time did not move in {:.0f} s (+{:.2f} s)", who, t.window_s, t.cpu_s));
        e.points_here = true;
      } else {
        e.items.push_back(fmt::format("{}: busy (+{:.1f} s CPU in {:.0f} s)", who, t.cpu_s, t.window_s));
      }
    }
    for (const auto& [index, gpu] : gpus_of(gpus, t.pids)) {
      if (!gpu->utilization_pct || *gpu->utilization_pct > kIdleGpuPct) continue;
      unsigned busiest = 0;
      for (const auto& [other, g] : job_gpus)
        if (other != index && g->utilization_pct) busiest = std::max(busiest, *g->utilization_pct);
      if (busiest < kBusyGpuPct) continue;  // every GPU of the job here idle: nothing to tell them apart
      e.items.push_back(fmt::format("{}: GPU {} ({}) at {}% while the job's other GPUs here are busy ({}%)", who, index,
                                    gpu->bus_id, *gpu->utilization_pct, busiest));
      e.points_here = true;
    }
  }
  if (e.items.empty()) e.items.push_back("no task of the job seen here long enough to judge");
  return e;
}

}  // namespace ar::healthd
