// What an executor of one kind of journal entry may use and what it answers (actions/executors.cpp
// lists them all). An executor sees the node, the policy, Slurm, the journal, the timelines, the
// notices, the jobs' owners, the programs and GPU resets running for entries, the follow-up of
// requeued jobs and the little the executors remember in memory (ActingMemory): it is a file of its
// own and a row in the registry, and the class that runs the journal (slurm_actions.hpp) does not
// change when one is added.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actions/gpu_reset.hpp"
#include "actions/program_runs.hpp"
#include "actions/requeue_follow_up.hpp"
#include "actions/slurm_client.hpp"
#include "config/config.hpp"
#include "state/journal.hpp"
#include "state/timeline.hpp"
#include "vocabulary/action.hpp"
#include "vocabulary/notice.hpp"

namespace ar::healthd {

// The owners of the jobs acted on, as Slurm last gave them, by job id: the notices of what was done
// to a job name its user. An executor that read the job from Slurm notes it here.
using JobOwners = std::map<std::uint32_t, std::uint32_t>;

// What the executors remember between entries, in memory only (a restart starts afresh, as the
// sweep that follows it finds the same facts again); status shows both.
struct ActingMemory {
  std::string withheld;    // why the last drain was withheld, or given back, under max_drained_share
  std::string overridden;  // the fault code under which the node was found back in service
};

struct ExecutorServices {
  const std::string& node;  // this node's name in Slurm
  const PolicyConfig& policy;
  SlurmClient& slurm;
  Journal& journal;
  Timeline& timeline;
  NoticeSink* notices;  // nullptr: none are raised
  JobOwners& owners;
  ProgramRuns& programs;  // the admin's programs running for entries (a hook, a deep check)
  GpuResets& resets;      // how GPUs are reset, and the resets running for entries
  ActingMemory& memory;
  RequeueFollowUp& follow_up;  // the requeued jobs, until each runs again
  const std::string& boot_id;  // this boot's id: a cure's reboot asked for in it has not happened yet
  std::size_t jobs_here = 0;   // jobs running on this node (the registry, at the last sweep)
};

// What carrying out an entry came to: finished (done, or nothing left to do) or waiting (the executor
// set the entry's next try itself), and the action it carried out, if it did one (the admin's hooks
// on that action follow it). An error: the entry is tried again later, with backoff.
struct Carried {
  // Each member has its default (gcc warns of a designated initializer that leaves out one without).
  bool finished = true;
  std::optional<Action> acted = std::nullopt;
  // An admin's action (through healthctl) that did nothing on Slurm: what it came to, for its notice
  // ("not drained (IDLE); nothing to resume").
  std::string admin_outcome = {};
  // What the action said beyond its kind, for its notice (a stall's requeue: the suspects kept off).
  std::string detail = {};
};

using ExecutorFunction = std::expected<Carried, std::string> (*)(const ExecutorServices& services, const JournalEntry& e,
                                                                WallTime now);

// What several executors do: writes `line` as the job's auto-resume line in its admin comment, the
// other lines kept (annotate_executor.cpp). `current`: the admin comment as last read, if at hand
// (else it is read). A job gone is nothing left to annotate.
std::expected<void, std::string> annotate_job(SlurmClient& slurm, std::uint32_t job_id, const std::string& line,
                                              const std::optional<std::string>& current = std::nullopt);

// Raises a notice about `e` (its node, job, code; the job's owner where known, the admin who asked
// for an admin's entry) with `message`; nothing where no notices are raised.
void raise_notice(const ExecutorServices& services, NoticeKind kind, const JournalEntry& e, std::string message,
                  std::string action, WallTime now);
// A cure step's notice (kind cure, about healthd's own drain), and its line in the timelines of the
// jobs the fault ended here (cure_walk.cpp). `step` none: about the chain as a whole.
void cure_notice(const ExecutorServices& services, const std::string& message, Action step, WallTime now);

// Whether a cure's replace step can run here: some [[policy.hook]] runs on replace (the hook is what
// asks for the new hardware). Nothing: it can (cure_walk.cpp, as the next three).
std::optional<CannotRun> replace_cannot_run(const std::vector<HookConfig>& hooks);
// Whether a cure's reboot can run here: Slurm's RebootProgram (`reboot_program`, "" for none).
std::optional<CannotRun> reboot_cannot_run(const std::string& reboot_program);
// A drain reason `base` (healthd's, of the fault) with what the node needs said at its end,
// "... (needs a reboot: slurm.conf has no RebootProgram)", within Slurm's bound on a reason; an
// earlier such ending of healthd's is replaced, not added to.
std::string reason_needing(std::string base, const std::string& needs);

// The cure's current step cannot run here (`missing`): the chain stops, the node is held for an admin
// with a reason that says what it needs (`reason`, already set on Slurm by the caller).
void hold_cannot_run(const ExecutorServices& services, const CannotRun& missing, const std::string& reason, WallTime now);

// The drain executor (drain_executor.cpp); the replace step drains through it too.
std::expected<Carried, std::string> carry_out_drain(const ExecutorServices& services, const JournalEntry& e, WallTime now);
// max_drained_share's second look at healthd's own drain, once it is due (drain_executor.cpp): every
// daemon of a fabric-wide event then ranks the same complete set of drains, and exactly the ones
// past the share give theirs back.
void settle_share(const ExecutorServices& services, WallTime now);

// Journals the admin's hooks ([[policy.hook]] `on`) that follow `done`, which carried out `what`
// (hook_executor.cpp): called before `done` is marked finished, so a hook is never lost.
void journal_hooks_after(const PolicyConfig& policy, Journal& journal, const JournalEntry& done, Action what, WallTime now);

}  // namespace ar::healthd
