// What a faulty node's sweep calls for (engine/responder.cpp asks after every sweep that found a
// fault that takes the node out): from the sweep's facts, typed, into the journal entries, in the
// order they are journalled, and the jobs' timeline notes. Calls nothing;
// tests/unit/fault_policy_test.cpp is the table.
//
//   a new episode (no fault before, or another code)  -> counted towards flapping (unless only
//       reported), and drained, with the cure it starts (policy/cure_plan.hpp); held for an admin
//       when it is the flap_max_faults-th within flap_window
//   the same episode seen again                       -> no second drain
//   each auto-resume job here (and the one whose failed step asked for the sweep)
//                                                     -> requeued once per attempt; one waiting out a
//       checkpoint grace is hastened when the fault cannot wait
//   a fault announced ahead (checkpoint_first)        -> the jobs are signalled first, requeued after
//       the grace, and the drain is journalled after the signals
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/check.hpp"
#include "config/config.hpp"
#include "state/journal.hpp"
#include "state/timeline.hpp"

namespace ar::healthd::policy {

// What the journal holds already for one attempt of a job.
struct Journalled {
  bool requeued = false;         // it was requeued (its requeue entry finished)
  bool requeue_pending = false;  // a requeue entry waits
  bool signalled = false;
  bool signal_pending = false;
};

// A job a fault on this node may end.
struct JobAtFault {
  std::uint32_t job_id = 0;
  std::uint32_t restart_count = 0;
  bool auto_resume = false;
  std::optional<std::uint32_t> max_resumes;  // the user's cap, if lower than the admin's
  // Its auto-resume srun steps running here: with exactly one, the step may be re-run inside the
  // allocation instead of the job being requeued (actions/requeue_executor.cpp decides with Slurm's view).
  std::vector<std::uint32_t> auto_resume_steps;
  Journalled journalled;
};

// Where the node's fault episode stands before this sweep (the responder's memory).
struct Episode {
  bool faulty = false;
  std::string code;
};

struct FaultFacts {
  CheckResult fault;                 // the worst fault of the sweep, its text bounded already
  Episode episode;
  std::vector<JobAtFault> jobs;      // the jobs running here, then the one whose failed step asked
  std::vector<WallTime> fault_history;  // the new episodes counted so far (the journal keeps them)
  std::string node;
  WallTime now{};
};

struct FaultAnswer {
  bool new_episode = false;
  bool held = false;                       // the drain is kept for an admin (flapping)
  std::vector<WallTime> fault_history;     // pruned to the window, with this episode counted
  std::vector<JournalEntry> entries;       // journalled in this order (the drain among them)
  // Requeues waiting out a checkpoint grace that must now happen by the time given.
  std::vector<std::pair<JobAtFault, WallTime>> hasten;
  std::vector<std::pair<std::uint32_t, TimelineEvent>> notes;  // job id, what its timeline says
};

FaultAnswer judge_fault(const FaultFacts& facts, const PolicyConfig& policy);

// What healthd's drain says in Slurm's reason: "healthd: <code>: <message>", and why it is kept out
// when it is held for flapping; bounded to what Slurm keeps.
std::string drain_reason(const CheckResult& fault, bool held, const PolicyConfig& policy);

// A job's requeue for `code` (a fault here, a stall, an application failure), acting at `not_before`:
// a new entry, or the hastening of one already waiting, or nothing (requeued already). Report-only
// asks again for the entry so that it is said once. One auto-resume step here is marked for a re-run,
// except for healthd's own codes (a stall or the application's failure is not a node's fault).
struct RequeueAnswer {
  std::optional<JournalEntry> entry;
  std::optional<WallTime> hasten;
};
RequeueAnswer requeue_for(const JobAtFault& job, const std::string& code, const std::string& message,
                          WallTime not_before, bool report_only, const std::string& node, WallTime now);

// The drain entry of a new fault episode on `node` at `now`, with the cure it starts: its reason
// (`reason`, said by the caller), held or not (flapping: kept out until an admin resumes it), the
// fault's chain and GPUs, a reboot where the chain starts with one (Slurm drains and reboots the
// node, which comes back drained for healthd to judge; never a node held for an admin), and the
// auto-resume jobs the fault ends here (`jobs`: each once, 64 at most), whose timelines tell each step.
JournalEntry episode_drain(const CureConfig& config, const CheckResult& fault, bool held, std::string reason,
                           const std::vector<std::uint32_t>& jobs, const std::string& node, WallTime now);

}  // namespace ar::healthd::policy
