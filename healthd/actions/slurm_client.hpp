// Everything healthd asks of or does to Slurm, behind one interface, so the decision logic is tested
// with a recording fake (tests/unit/responder_test.cpp) and the real implementation, through Slurm's
// C API (slurm_api_client.hpp), is exercised on the test cluster. The records it answers with are
// the vocabulary's (vocabulary/slurm_facts.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vocabulary/slurm_facts.hpp"

namespace ar::healthd {

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  virtual SlurmResult<NodeInfo> node(const std::string& name) = 0;
  // Every node slurmctld knows, each with the partitions it is in: one read of the whole node table,
  // whatever the number of partitions looked at in it (max_drained_share, a step re-run).
  virtual SlurmResult<std::vector<NodeInfo>> node_table() = 0;
  virtual SlurmResult<JobInfo> job(std::uint32_t job_id) = 0;
  virtual SlurmResult<void> drain(const std::string& node, const std::string& reason) = 0;
  // Drains the node now (with `reason`) and reboots it once idle; it comes back still drained, its
  // reason kept (Slurm appends " : reboot issued"), for healthd to judge and return. Fails with
  // not_set_up where the cluster has no RebootProgram.
  virtual SlurmResult<void> reboot(const std::string& node, const std::string& reason) = 0;
  virtual SlurmResult<void> resume(const std::string& node) = 0;
  virtual SlurmResult<void> set_reason(const std::string& node, const std::string& reason) = 0;
  virtual SlurmResult<void> requeue(std::uint32_t job_id) = 0;
  virtual SlurmResult<void> update_job(std::uint32_t job_id, const JobUpdate& update) = 0;
  virtual SlurmResult<void> cancel(std::uint32_t job_id) = 0;
  // The job's steps slurmctld knows of (running ones; the batch and extern steps included).
  virtual SlurmResult<std::vector<StepInfo>> job_steps(std::uint32_t job_id) = 0;
  // Kills one step (SIGKILL to its tasks on every node); the job and its other steps go on.
  virtual SlurmResult<void> kill_step(std::uint32_t job_id, std::uint32_t step_id) = 0;
  // Sends `signal` ("USR1") once to every step's tasks and to the batch script, so the job sees it
  // wherever it traps it.
  virtual SlurmResult<void> signal_job(std::uint32_t job_id, const std::string& signal) = 0;
};

}  // namespace ar::healthd
