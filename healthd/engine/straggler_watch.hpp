// Stragglers while a job runs: which node's ranks of a per-rank job (--auto-resume-heartbeat-dir)
// take longer a step than the rest of the job.
//
// One slow node slows a synchronous job for weeks: every rank waits for the slowest at each
// collective, and no check needs to fail for it (a GPU held at low clocks, a PCIe link trained down,
// a retransmitting EFA link, or nothing any check names). Each node judges its own ranks, from the
// rank files every node sees (the directory is on the shared filesystem):
//   - a rank's file holds the step it finished, "STEP", or "STEP BUSY_S" with the seconds its own work
//     on the step took before it waited for the others (collectors/heartbeat_reader.hpp RankStep);
//   - a rank's step time over the window is, with busy times, their mean; without, the file times of
//     its oldest and newest step in the window over the steps between (the file's time is when the
//     rank wrote the step, so the sweep's timing adds no error);
//   - the node straggles when its slowest rank's step time is above the median of the job's ranks on
//     the other nodes by more than `share`, over a whole window (the watch has seen the job for at
//     least the window, and the rank's steps span at least half of it).
// Where every rank waits for the slowest at each step, every rank's pace is the job's: only the
// busy times tell which rank makes the others wait, and the docs say so.
//
// Bounded: a job's other ranks are sampled (at most kMaxSampledRanks of them, spread over the
// ranks), each rank keeps at most kMaxSamples steps (one per window/kMaxSamples). Pure: the
// responder feeds it what the stall watch read and acts on what it answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/heartbeat_reader.hpp"
#include "engine/stall_watch.hpp"
#include "vocabulary/check_result.hpp"

namespace ar::healthd {

struct RankPace {
  std::uint32_t rank = 0;
  double step_s = 0;  // seconds a step, over the window
};

struct StragglerFinding {
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  std::vector<RankPace> slow;  // this node's ranks past the limit, slowest first
  double median_s = 0;         // the median step time of the job's ranks on the other nodes
  std::size_t others = 0;      // how many of those ranks had a pace
  bool busy_times = false;     // the ranks' own busy times, not their pace
  std::chrono::seconds window{0};
  // The slowest's excess over the median: 0.5 is 50% slower.
  double over() const { return slow.empty() || median_s <= 0 ? 0 : slow.front().step_s / median_s - 1; }
  // "rank 3 took 1.52 s a step against 1.01 s, the median of 7 ranks on other nodes (+50%), over 300 s"
  std::string text() const;
};

class StragglerWatch {
 public:
  static constexpr std::size_t kMaxSampledRanks = 256;
  static constexpr std::size_t kMaxSamples = 16;

  // One reading of the job's rank files. `mine`: the job's ranks on this node (always kept).
  void observe(std::uint32_t job_id, std::uint32_t restart_count, const std::map<std::uint32_t, RankStep>& steps,
               const std::vector<std::uint32_t>& mine, std::chrono::seconds window, StallClock::time_point now);
  // This node's ranks `mine` of the job against the others', over the window ending now; none when
  // they keep up, or when the window is not covered yet.
  std::optional<StragglerFinding> judge(std::uint32_t job_id, const std::vector<std::uint32_t>& mine, double share,
                                        std::chrono::seconds window, StallClock::time_point now) const;
  // Forgets the jobs not listed.
  void keep_only(const std::set<std::uint32_t>& jobs);

 private:
  struct Sample {
    StallClock::time_point seen;
    RankStep step;
  };
  struct Job {
    std::uint32_t restart_count = 0;
    StallClock::time_point first_seen;
    std::map<std::uint32_t, std::deque<Sample>> ranks;
  };
  std::optional<RankPace> pace(std::uint32_t rank, const std::deque<Sample>& samples, bool busy,
                               std::chrono::seconds window, StallClock::time_point now) const;
  std::map<std::uint32_t, Job> jobs_;
};

// What the node's GPU, EFA and Neuron checks said in `results` (the sweep a straggler is found in):
// "gpu ok; efa EFA-LINK-ERRORS: ...". For the report: a slow node's reason is often there.
std::string what_checks_say(const std::vector<CheckResult>& results);

}  // namespace ar::healthd
