// What a faulty node's sweep calls for (policy/fault_policy.cpp), as a table: the sweep's facts into
// the journal entries in their order, the requeues hastened and the jobs' timeline notes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "checks/result_util.hpp"
#include "policy/fault_policy.hpp"

namespace ar::healthd::policy {
namespace fault_policy_test {

using namespace std::chrono_literals;

const WallTime kNow = WallTime{} + std::chrono::hours(24 * 365 * 50);

JobAtFault job(std::uint32_t id, bool auto_resume, std::vector<std::uint32_t> steps = {}) {
  return JobAtFault{.job_id = id, .restart_count = 0, .auto_resume = auto_resume, .max_resumes = std::nullopt,
                    .auto_resume_steps = std::move(steps), .journalled = {}};
}

// A node with no fault before finds XID 79 (a reboot cures it); job 7 (auto-resume) and job 9 (not)
// run here. Each row changes what it names.
FaultFacts xid79() {
  const auto fault = make_finding("gpu", "GPU-XID-79", Remedy::reboot, "GPU has fallen off the bus");
  return FaultFacts{.fault = fault, .episode = {}, .jobs = {job(7, true), job(9, false)}, .fault_history = {}, .node = "n1",
                    .now = kNow};
}

FaultFacts with(FaultFacts f, auto change) {
  change(f);
  return f;
}

// "drain[reboot,jobs=7] requeue#7+0s | hasten#7+0s | #7 fault seen": what is journalled, in order
// (a drain with its flags and the jobs its cure follows, a job's entry with when it is due and the
// step it re-runs), then the requeues hastened, then the notes.
std::string summary(const FaultAnswer& a) {
  auto after = [](WallTime t) { return "+" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(t - kNow).count()) + "s"; };
  std::string out;
  for (const auto& e : a.entries) {
    if (!out.empty()) out += " ";
    out += to_string(e.kind);
    if (e.kind == Action::drain) {
      std::string flags = e.held ? "held" : "";
      if (e.reboot) flags += flags.empty() ? "reboot" : ",reboot";
      std::string jobs;
      for (auto j : e.cure->jobs) jobs += (jobs.empty() ? "" : "/") + std::to_string(j);
      if (!jobs.empty()) flags += (flags.empty() ? "jobs=" : ",jobs=") + jobs;
      if (!flags.empty()) out += "[" + flags + "]";
    }
    if (e.job_id != 0) out += "#" + std::to_string(e.job_id);
    if (e.kind == Action::requeue && e.job_id != 0) out += after(e.next_try);
    if (e.kind == Action::signal) out += "(" + e.reason + ")";
    if (e.rerun_step) out += " rerun=" + std::to_string(*e.rerun_step);
  }
  out += " |";
  for (const auto& [j, by] : a.hasten) out += " hasten#" + std::to_string(j.job_id) + after(by);
  out += " |";
  for (const auto& [id, event] : a.notes) out += " #" + std::to_string(id) + " " + event.event + ";";
  return out;
}

struct Row {
  const char* what;
  FaultFacts facts;
  std::string expected;
  bool report_only = false;
};

PolicyConfig policy_of(const Row& row) {
  PolicyConfig p;
  p.flap_max_faults = 3;
  p.flap_window = 3600s;
  p.report_only = row.report_only;
  return p;
}

TEST(FaultPolicy, WhatAFaultySweepJournals) {
  const Row rows[] = {
      {"a new episode: drained first (a reboot starts the cure), the auto-resume job requeued, both told", xid79(),
       "drain[reboot,jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;"},
      {"the same episode again: no second drain, nobody told again, the requeue asked again",
       with(xid79(), [](auto& f) { f.episode = {true, "GPU-XID-79"}; }), "requeue#7+0s | |"},
      {"another fault while faulty: a new episode, drained for",
       with(xid79(), [](auto& f) { f.episode = {true, "GPU-XID-48"}; }), "drain[reboot,jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;"},
      {"a job requeued for this attempt already: not again, and not told again",
       with(xid79(), [](auto& f) { f.jobs[0].journalled.requeued = true; }), "drain[reboot,jobs=7] | | #9 fault seen;"},
      {"a requeue waiting out a grace: hastened to now",
       with(xid79(), [](auto& f) { f.episode = {true, "GPU-XID-79"}; f.jobs[0].journalled.requeue_pending = true; }),
       " | hasten#7+0s |"},
      {"report only, a requeue waiting: said, not hastened",
       with(xid79(), [](auto& f) { f.episode = {true, "GPU-XID-79"}; f.jobs[0].journalled.requeue_pending = true; }),
       "requeue#7+0s | |", true},
      {"the third episode within the window: held for an admin, the cure is new hardware (no reboot)",
       with(xid79(), [](auto& f) { f.fault_history = {kNow - 600s, kNow - 60s}; }),
       "drain[held,jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;"},
      {"earlier episodes outside the window do not count",
       with(xid79(), [](auto& f) { f.fault_history = {kNow - 7200s, kNow - 3601s}; }),
       "drain[reboot,jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;"},
      {"report only: the episode is not counted, so it does not hold the next",
       with(xid79(), [](auto& f) { f.fault_history = {kNow - 600s, kNow - 60s}; }),
       "drain[reboot,jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;", true},
      {"announced ahead with a signal: signalled first, requeued after the grace, drained after the signals",
       with(xid79(), [](auto& f) { f.fault.checkpoint_first = CheckpointFirst{"USR1", 120s}; }),
       "signal#7(USR1) requeue#7+120s drain[reboot,jobs=7] | | #7 fault seen; #9 fault seen;"},
      {"announced ahead, no signal set: none sent, the job told, requeued after the grace",
       with(xid79(), [](auto& f) { f.fault.checkpoint_first = CheckpointFirst{"", 120s}; }),
       "requeue#7+120s drain[reboot,jobs=7] | | #7 fault seen; #7 no checkpoint signal; #9 fault seen;"},
      {"announced ahead, the job signalled already: not twice",
       with(xid79(), [](auto& f) {
         f.fault.checkpoint_first = CheckpointFirst{"USR1", 120s};
         f.episode = {true, "GPU-XID-79"};
         f.jobs[0].journalled.signalled = true;
         f.jobs[0].journalled.requeue_pending = true;
       }),
       " | hasten#7+120s |"},
      {"one auto-resume step here: it may be re-run instead", with(xid79(), [](auto& f) { f.jobs[0].auto_resume_steps = {4}; }),
       "drain[reboot,jobs=7] requeue#7+0s rerun=4 | | #7 fault seen; #9 fault seen;"},
      {"two auto-resume steps here: no telling which, a requeue",
       with(xid79(), [](auto& f) { f.jobs[0].auto_resume_steps = {4, 5}; }),
       "drain[reboot,jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;"},
      {"a job here whose failed step asked too: requeued and told once",
       with(xid79(), [](auto& f) { f.jobs.push_back(job(7, true, {3})); }),
       "drain[reboot,jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;"},
      {"the failed step is auto-resume where the job here is not: requeued once, told once",
       with(xid79(), [](auto& f) { f.jobs.push_back(job(9, true, {2})); }),
       "drain[reboot,jobs=7/9] requeue#7+0s requeue#9+0s rerun=2 | | #7 fault seen; #9 fault seen;"},
      {"no jobs here: the drain alone", with(xid79(), [](auto& f) { f.jobs.clear(); }), "drain[reboot] | |"},
      {"a fault a drain alone answers: no cure chain, no reboot",
       with(xid79(), [](auto& f) { f.fault.code = "STORAGE-RO"; f.fault.action = Remedy::drain; }),
       "drain[jobs=7] requeue#7+0s | | #7 fault seen; #9 fault seen;"},
  };
  for (const auto& row : rows) {
    const auto answer = judge_fault(row.facts, policy_of(row));
    EXPECT_EQ(summary(answer), row.expected) << row.what;
  }
}

TEST(FaultPolicy, ANewEpisodeIsCountedAndTheHistoryKeptToTheWindow) {
  PolicyConfig p;
  p.flap_max_faults = 3;
  p.flap_window = 3600s;
  const auto a = judge_fault(with(xid79(), [](auto& f) { f.fault_history = {kNow - 7200s, kNow - 60s}; }), p);
  EXPECT_TRUE(a.new_episode);
  EXPECT_FALSE(a.held);
  EXPECT_EQ(a.fault_history, (std::vector<WallTime>{kNow - 60s, kNow}));
  // The same episode: the history is not touched.
  const auto same = judge_fault(with(xid79(), [](auto& f) {
                                  f.episode = {true, "GPU-XID-79"};
                                  f.fault_history = {kNow - 7200s};
                                }),
                                p);
  EXPECT_FALSE(same.new_episode);
  EXPECT_EQ(same.fault_history, (std::vector<WallTime>{kNow - 7200s}));
}

TEST(FaultPolicy, TheDrainSaysTheFaultAndWhyAHeldNodeStaysOut) {
  PolicyConfig p;
  p.flap_max_faults = 2;
  p.flap_window = 600s;
  const auto plain = judge_fault(xid79(), p);
  EXPECT_EQ(plain.entries.front().reason, "healthd: GPU-XID-79: GPU has fallen off the bus");
  const auto held = judge_fault(with(xid79(), [](auto& f) { f.fault_history = {kNow - 60s}; }), p);
  ASSERT_TRUE(held.held);
  EXPECT_EQ(held.entries.front().reason,
            "healthd: GPU-XID-79: GPU has fallen off the bus (2 faults within 600 s: kept out until an admin resumes it)");
}

TEST(FaultPolicy, HealthdsOwnReasonsAreNeverAStepReRun) {
  auto j = job(7, true, {4});
  for (const char* code : {kStall, kAppFailure}) {
    const auto r = requeue_for(j, code, "why", kNow, false, "n1", kNow);
    ASSERT_TRUE(r.entry) << code;
    EXPECT_FALSE(r.entry->rerun_step) << code;
    EXPECT_EQ(r.entry->reason, "why");
  }
  EXPECT_EQ(requeue_for(j, "GPU-XID-79", "why", kNow, false, "n1", kNow).entry->rerun_step, 4u);
}

}  // namespace fault_policy_test
}  // namespace ar::healthd::policy
