#include "engine/straggler_watch.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ar::healthd {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double seconds_between(FileTime a, FileTime b) { return std::chrono::duration<double>(b - a).count(); }

bool is_mine(const std::vector<std::uint32_t>& mine, std::uint32_t rank) {
  return std::find(mine.begin(), mine.end(), rank) != mine.end();
}

}  // namespace

std::string StragglerFinding::text() const {
  if (slow.empty()) return {};
  std::string ranks;
  for (const auto& r : slow) ranks += fmt::format("{}rank {} {:.3g} s", ranks.empty() ? "" : ", ", r.rank, r.step_s);
  return fmt::format("{} a step{} against {:.3g} s, the median of {} rank(s) on other nodes (+{:.0f}%), over {} s", ranks,
                     busy_times ? " of its own work" : "", median_s, others, over() * 100, window.count());
}

void StragglerWatch::observe(std::uint32_t job_id, std::uint32_t restart_count,
                             const std::map<std::uint32_t, RankStep>& steps, const std::vector<std::uint32_t>& mine,
                             std::chrono::seconds window, StallClock::time_point now) {
  auto [it, fresh] = jobs_.try_emplace(job_id);
  Job& job = it->second;
  if (fresh || restart_count != job.restart_count) {
    job = Job{};
    job.restart_count = restart_count;
    job.first_seen = now;
  }
  // The others, spread over the ranks: every stride-th of them, so a sample of a huge job still has
  // ranks of every part of it.
  const std::size_t stride = std::max<std::size_t>(1, (steps.size() + kMaxSampledRanks - 1) / kMaxSampledRanks);
  const auto spacing = window / static_cast<long>(kMaxSamples);
  std::size_t index = 0;
  for (const auto& [rank, step] : steps) {
    const bool sampled = index++ % stride == 0;
    if (!sampled && !is_mine(mine, rank)) continue;
    auto& samples = job.ranks[rank];
    // A step number that went back: the rank's loop started over (a new step counter); its pace
    // starts over with it.
    if (!samples.empty() && step.step < samples.back().step.step) samples.clear();
    if (!samples.empty() && step.step == samples.back().step.step) continue;
    // One sample per spacing at most; the newest replaces the last when closer than that.
    if (samples.size() >= 2 && now - samples[samples.size() - 2].seen < spacing) samples.back() = {now, step};
    else samples.push_back({now, step});
    while (!samples.empty() && (samples.size() > kMaxSamples + 1 || now - samples.front().seen > window + spacing))
      samples.pop_front();
  }
  // A rank missing from one reading (its file read while the rank rewrote it) keeps its pace; one
  // not heard of for two windows (its file gone, or the rank stopped) is dropped.
  std::erase_if(job.ranks, [&](const auto& kv) { return kv.second.empty() || now - kv.second.back().seen > 2 * window; });
}

std::optional<RankPace> StragglerWatch::pace(std::uint32_t rank, const std::deque<Sample>& samples, bool busy,
                                             std::chrono::seconds window, StallClock::time_point now) const {
  std::vector<const Sample*> in;
  for (const auto& s : samples)
    if (now - s.seen <= window) in.push_back(&s);
  if (in.size() < 2) return std::nullopt;
  if (busy) {
    double sum = 0;
    for (const auto* s : in) sum += *s->step.busy_s;
    return RankPace{rank, sum / static_cast<double>(in.size())};
  }
  const auto& first = in.front()->step;
  const auto& last = in.back()->step;
  const double span = seconds_between(first.at, last.at);
  // Steps over less than half the window say too little (a rank that just started, a sparse sample).
  if (last.step - first.step < 2 || span < std::chrono::duration<double>(window).count() / 2) return std::nullopt;
  return RankPace{rank, span / static_cast<double>(last.step - first.step)};
}

std::optional<StragglerFinding> StragglerWatch::judge(std::uint32_t job_id, const std::vector<std::uint32_t>& mine,
                                                      double share, std::chrono::seconds window,
                                                      StallClock::time_point now) const {
  const auto it = jobs_.find(job_id);
  if (it == jobs_.end() || now - it->second.first_seen < window) return std::nullopt;
  const Job& job = it->second;
  // Busy times where every rank in the window gives them; a mix says nothing comparable.
  bool busy = true;
  for (const auto& [rank, samples] : job.ranks)
    for (const auto& s : samples)
      if (now - s.seen <= window && !s.step.busy_s) busy = false;
  std::vector<double> others;
  std::vector<RankPace> own;
  for (const auto& [rank, samples] : job.ranks) {
    const auto p = pace(rank, samples, busy, window, now);
    if (!p) continue;
    if (is_mine(mine, rank)) own.push_back(*p);
    else others.push_back(p->step_s);
  }
  if (others.empty() || own.empty()) return std::nullopt;
  StragglerFinding f;
  f.job_id = job_id;
  f.restart_count = job.restart_count;
  f.median_s = median_of(others);
  f.others = others.size();
  f.busy_times = busy;
  f.window = window;
  if (f.median_s <= 0) return std::nullopt;
  for (const auto& p : own)
    if (p.step_s > f.median_s * (1 + share)) f.slow.push_back(p);
  if (f.slow.empty()) return std::nullopt;
  std::sort(f.slow.begin(), f.slow.end(), [](const RankPace& a, const RankPace& b) { return a.step_s > b.step_s; });
  return f;
}

void StragglerWatch::keep_only(const std::set<std::uint32_t>& jobs) {
  std::erase_if(jobs_, [&](const auto& kv) { return !jobs.contains(kv.first); });
}

std::string what_checks_say(const std::vector<CheckResult>& results) {
  // The GPU check's results (gpu.clocks, gpu.pcie, ...; DCGM's gpu.dcgm), EFA's and Neuron's: what
  // finds a slow node's reason where a check can. What they find first, then what passes.
  std::string found, passed;
  for (const auto& r : results) {
    if (!r.applicable) continue;
    if (!r.check.starts_with("gpu.") && r.check != "efa" && r.check != "neuron") continue;
    if (r.status == Status::ok) passed += (passed.empty() ? "" : ", ") + r.check;
    else found += (found.empty() ? "" : "; ") + r.check + " " + r.code + ": " + r.message;
  }
  if (found.empty() && passed.empty()) return "no GPU, EFA or Neuron check applies on this node";
  if (passed.empty()) return found;
  return found + (found.empty() ? "" : "; ") + passed + " pass";
}

}  // namespace ar::healthd
