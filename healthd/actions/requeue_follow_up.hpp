// The follow-up of the jobs healthd requeued, until each runs again (or ends, or 10 minutes pass):
// the "running again" line of its timeline and its notice, its raised priority set back to Slurm's
// own, and the nudges that have slurmctld schedule a released job in the second its begin time
// comes. Its state is its own (lost on a restart: a job requeued just before it is not followed);
// the requeue executor (requeue_executor.cpp) hands jobs over, the run of the journal asks it to look
// when due (SlurmActions::follow_requeued), over the executors' services.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <vector>

#include "state/journal.hpp"
#include "vocabulary/slurm_facts.hpp"

namespace ar::healthd {

struct ExecutorServices;

class RequeueFollowUp {
 public:
  // Follows attempt `attempt` of `job_id`, requeued at `now`; `raised_priority`: it waits with
  // healthd's top priority, set back once it runs. A job followed already keeps its start.
  void follow(std::uint32_t job_id, std::uint32_t attempt, WallTime now, bool raised_priority = false);
  // Asks slurmctld to schedule attempt `attempt` of `job_id` again just after `begin` (slurmctld's
  // clock), while it still waits for that begin time (see requeue_release).
  void nudge(std::uint32_t job_id, std::uint32_t attempt, std::time_t begin);

  // The nudges and looks that are due at `now`; owners of jobs neither followed nor with an entry
  // pending are forgotten.
  void look(const ExecutorServices& services, WallTime now);
  // When the next nudge or look is due; nothing while none is.
  std::optional<WallTime> next_due() const;

  // Requeued jobs not yet running again: the node is not returned before they are.
  bool following() const { return !followed_.empty(); }
  bool following(std::uint32_t job_id) const;

 private:
  struct Followed {
    std::uint32_t job_id;
    std::uint32_t restart_count;  // the attempt that is to run
    WallTime since;
    WallTime next_look;
    bool raised_priority = false;  // set back to Slurm's own once it runs
  };
  // A released job that may need the scheduler asked again once its begin time has passed.
  struct Nudge {
    std::uint32_t job_id;
    std::uint32_t restart_count;
    std::time_t begin;  // slurmctld's clock
    WallTime at;
    int left;           // updates still allowed
  };
  // One nudge; true when it is over.
  static bool nudge_once(const ExecutorServices& services, Nudge& n, WallTime now);
  // One look at a requeued job: running again, still waiting, or ended. True when it is no longer followed.
  static bool look_at(const ExecutorServices& services, Followed& f, WallTime now);
  static void running_again(const ExecutorServices& services, const Followed& f, const JobInfo& job, WallTime started,
                            WallTime now);

  std::vector<Followed> followed_;
  std::vector<Nudge> nudges_;
};

}  // namespace ar::healthd
