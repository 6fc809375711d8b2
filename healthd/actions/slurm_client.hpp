// Everything healthd asks of or does to Slurm, behind one interface, so the decision logic is tested
// with a recording fake and the real implementation (scontrol) is exercised on the test cluster.
// On Slurm 22.05 drain and requeue can only go through scontrol or libslurm (slurmrestd v0.0.38 has
// no node updates and no requeue); scontrol keeps healthd free of libslurm's ABI.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ar::healthd {

struct NodeInfo {
  std::string name;
  std::string state;   // e.g. "IDLE", "MIXED+DRAIN", "ALLOCATED"
  std::string reason;  // empty when none
  std::vector<std::string> partitions;
  bool drained_or_draining() const;
  bool reboot_pending() const;  // REBOOT_REQUESTED or REBOOT_ISSUED
};

struct JobInfo {
  std::uint32_t job_id = 0;
  std::string state;        // RUNNING, PENDING, COMPLETING, ...
  std::string reason;       // e.g. BeginTime
  std::uint32_t restart_count = 0;
  std::string node_list;    // compressed host list
  std::string comment;
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  virtual std::expected<NodeInfo, std::string> node(const std::string& name) = 0;
  virtual std::expected<std::vector<NodeInfo>, std::string> partition_nodes(const std::string& partition) = 0;
  virtual std::expected<JobInfo, std::string> job(std::uint32_t job_id) = 0;
  virtual std::expected<std::vector<std::uint32_t>, std::string> jobs_on_node(const std::string& node) = 0;
  virtual std::expected<void, std::string> drain(const std::string& node, const std::string& reason) = 0;
  // Drains the node now and reboots it once idle; Slurm resumes it when it is back (nextstate=RESUME).
  // Fails where the cluster has no RebootProgram.
  virtual std::expected<void, std::string> reboot(const std::string& node, const std::string& reason) = 0;
  virtual std::expected<void, std::string> resume(const std::string& node) = 0;
  virtual std::expected<void, std::string> set_reason(const std::string& node, const std::string& reason) = 0;
  virtual std::expected<void, std::string> requeue(std::uint32_t job_id) = 0;
  virtual std::expected<void, std::string> release_hold(std::uint32_t job_id) = 0;  // starttime=now
  virtual std::expected<void, std::string> set_comment(std::uint32_t job_id, const std::string& comment) = 0;
  virtual std::expected<void, std::string> cancel(std::uint32_t job_id) = 0;
  // Sends `signal` ("USR1") once to every step's tasks and to the batch script, so the job sees it
  // wherever it traps it (scancel --signal=SIG, then scancel --signal=SIG --batch).
  virtual std::expected<void, std::string> signal_job(std::uint32_t job_id, const std::string& signal) = 0;
};

// Parses `scontrol show ... -o` output (one record per line, Key=Value words; the value of Reason,
// Comment and a few others runs to the next Key=).
std::map<std::string, std::string> parse_scontrol_record(const std::string& line);

class ScontrolClient : public SlurmClient {
 public:
  explicit ScontrolClient(std::string scontrol = "scontrol", std::chrono::milliseconds timeout = std::chrono::seconds(10));

  std::expected<NodeInfo, std::string> node(const std::string& name) override;
  std::expected<std::vector<NodeInfo>, std::string> partition_nodes(const std::string& partition) override;
  std::expected<JobInfo, std::string> job(std::uint32_t job_id) override;
  std::expected<std::vector<std::uint32_t>, std::string> jobs_on_node(const std::string& node) override;
  std::expected<void, std::string> drain(const std::string& node, const std::string& reason) override;
  std::expected<void, std::string> reboot(const std::string& node, const std::string& reason) override;
  std::expected<void, std::string> resume(const std::string& node) override;
  std::expected<void, std::string> set_reason(const std::string& node, const std::string& reason) override;
  std::expected<void, std::string> requeue(std::uint32_t job_id) override;
  std::expected<void, std::string> release_hold(std::uint32_t job_id) override;
  std::expected<void, std::string> set_comment(std::uint32_t job_id, const std::string& comment) override;
  std::expected<void, std::string> cancel(std::uint32_t job_id) override;
  std::expected<void, std::string> signal_job(std::uint32_t job_id, const std::string& signal) override;

 private:
  std::expected<std::string, std::string> scontrol(const std::vector<std::string>& args);
  // An scontrol call whose output is of no interest: only whether it worked.
  std::expected<void, std::string> command(const std::vector<std::string>& args);
  // A Slurm command installed beside scontrol (squeue, scancel).
  std::string sibling(const std::string& name) const;

  std::string scontrol_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ar::healthd
