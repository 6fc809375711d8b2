// What Slurm showed and what healthd asks of it, as typed facts: a node's record, a job's, a step's,
// a change to a job, and why a call failed. Every field comes from a typed field of Slurm's own
// structures (actions/slurm_records.cpp), never from parsing command output: a node's reason or a
// job's comment is free text, and parsed out of `scontrol show -o` it could forge any other field
// (issue 11). In the vocabulary so the policy (policy/) decides on them without reaching Slurm.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <expected>
#include <optional>
#include <string>
#include <vector>

namespace ar::healthd {

// Why a Slurm call failed, as the action layer acts on it.
struct SlurmError {
  enum class Kind {
    gone,           // the job or node does not exist (ESLURM_INVALID_JOB_ID, ESLURM_INVALID_NODE_NAME)
    refused,        // Slurm will not do it for this job or node (ESLURM_DISABLED: requeue disabled, ...)
    not_answering,  // slurmctld unreachable, or the call passed its deadline: try again later
    not_set_up,     // the cluster is not set up for it, and no retry helps (reboot: slurm.conf has no
                    // RebootProgram): an admin must set it up
    other,          // any other error Slurm reported
  };
  Kind kind = Kind::other;
  std::string message;  // for logs and the journal: the call, and Slurm's words
  int code = 0;         // slurm_get_errno(), 0 where none

  SlurmError() = default;
  SlurmError(Kind k, std::string m, int c = 0) : kind(k), message(std::move(m)), code(c) {}
  // A plain message is an error of kind `other` (fakes, and failures outside Slurm).
  SlurmError(std::string m) : message(std::move(m)) {}  // NOLINT(google-explicit-constructor)
  SlurmError(const char* m) : message(m) {}             // NOLINT(google-explicit-constructor)
};

template <class T>
using SlurmResult = std::expected<T, SlurmError>;

// The job or node the call was about no longer exists.
inline bool gone(const SlurmError& e) { return e.kind == SlurmError::Kind::gone; }

struct NodeInfo {
  std::string name;
  std::string state;   // for messages only: Slurm's rendering of the state flags, e.g. "MIXED+DRAIN"
  std::string reason;  // empty when none
  std::vector<std::string> partitions;
  bool drain = false;   // NODE_STATE_DRAIN: drained or draining
  bool reboot = false;  // NODE_STATE_REBOOT_REQUESTED or NODE_STATE_REBOOT_ISSUED
  bool reboot_issued = false;  // NODE_STATE_REBOOT_ISSUED: slurmd was told to reboot; no resume calls it off
  std::time_t reason_time = 0;  // when the reason was set, slurmctld's clock (whole seconds); 0 when none
  bool down = false;            // NODE_STATE_DOWN, or not responding: no job starts there
  bool drained_or_draining() const { return drain; }
  bool reboot_pending() const { return reboot; }
};

struct JobInfo {
  std::uint32_t job_id = 0;
  std::string state;   // Slurm's name of the typed state: RUNNING, PENDING, COMPLETING, REQUEUED, ...
  std::string reason;  // Slurm's name of the pending reason, e.g. BeginTime
  std::uint32_t restart_count = 0;
  std::string node_list;      // compressed host list
  std::string comment;        // the user's (--comment): read, never written by healthd
  std::string admin_comment;  // where healthd says why an attempt ended
  bool requeue = true;        // Slurm would requeue it (not --no-requeue, nor JobRequeue=0 without --requeue)
  std::uint32_t priority = 0;
  std::chrono::system_clock::time_point start_time{};   // actual or expected; epoch when unknown
  std::chrono::system_clock::time_point submit_time{};  // slurmctld's clock; a requeue sets it anew
  std::uint32_t user_id = 0;  // the job's owner (notices name them)
  bool batch = false;         // a batch job (sbatch): it has a batch script
  std::string batch_host;     // the node its batch script runs on; empty when none
  bool heterogeneous = false;  // a component of a heterogeneous job (sbatch's ':' or --het-group)
  std::string partition;      // where it runs (a running job has one)
  std::vector<std::string> nodes;  // node_list, expanded
  std::vector<std::string> required;  // its ReqNodeList (--nodelist), expanded
  std::vector<std::string> excluded;  // its ExcNodeList (--exclude, and the suspects healthd kept off it), expanded
  // The state without its flags is PENDING: with COMPLETING, a requeued job whose last attempt is
  // still ending (its start_time is then the scheduler's expected start, not a run's).
  bool pending = false;
};

// Whether `name` is among `names` (a job's nodes, a step's).
inline bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A step of a job as slurmctld lists it (slurm_get_job_steps).
struct StepInfo {
  std::uint32_t step_id = 0;
  std::vector<std::string> nodes;  // expanded
};

// A change to a pending job in one request (slurm_update_job); unset fields stay as they are.
struct JobUpdate {
  std::optional<std::time_t> begin;       // lift the requeue hold: eligible from then (slurmctld's clock;
                                          // a time past is taken as slurmctld's now)
  std::optional<std::uint32_t> priority;  // a fixed priority
  bool reset_priority = false;            // back to the priority Slurm computes
  std::optional<std::string> admin_comment;
  // A running job: the nodes it keeps (a subset of its allocation; the others leave it at once, and
  // their tasks are killed).
  std::optional<std::vector<std::string>> nodes;
  // A pending job: the nodes it must not be placed on (its whole ExcNodeList, which this replaces).
  std::optional<std::vector<std::string>> excluded;
};

}  // namespace ar::healthd
