// SlurmClient through Slurm's C API (slurm.h, libslurm of the series the package is built for):
// typed fields, no text to parse, and about a tenth of the cost of forking scontrol.
//
// Every call runs on one worker thread with a deadline (BoundedCaller): libslurm blocks, and a
// stuck slurmctld must not stop the engine. Calls are serialised there, which is also what keeps
// libslurm's process-wide state to one thread.
//
// The one exception is reboot: libslurm 22.05 exports no reboot call (scontrol uses an internal
// RPC), so the node is drained through the API and `scontrol reboot reason=...` is run, and only its
// exit status is read (see reboot() for why neither ASAP nor nextstate).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "bounded_call.hpp"
#include "slurm_client.hpp"

namespace ar::healthd {

// The kind of a Slurm error number (slurm_get_errno()); `what` names the call for the message.
SlurmError slurm_error(const std::string& what, int code);

class SlurmApiClient : public SlurmClient {
 public:
  // `scontrol`: absolute path, for reboot only. `timeout`: one call's deadline.
  SlurmApiClient(std::string scontrol, std::chrono::milliseconds timeout);

  SlurmResult<NodeInfo> node(const std::string& name) override;
  SlurmResult<std::vector<NodeInfo>> node_table() override;
  SlurmResult<JobInfo> job(std::uint32_t job_id) override;
  SlurmResult<void> drain(const std::string& node, const std::string& reason) override;
  SlurmResult<void> reboot(const std::string& node, const std::string& reason) override;
  SlurmResult<void> resume(const std::string& node) override;
  SlurmResult<void> set_reason(const std::string& node, const std::string& reason) override;
  SlurmResult<void> requeue(std::uint32_t job_id) override;
  SlurmResult<void> update_job(std::uint32_t job_id, const JobUpdate& update) override;
  SlurmResult<void> cancel(std::uint32_t job_id) override;
  SlurmResult<std::vector<StepInfo>> job_steps(std::uint32_t job_id) override;
  SlurmResult<void> kill_step(std::uint32_t job_id, std::uint32_t step_id) override;
  SlurmResult<void> signal_job(std::uint32_t job_id, const std::string& signal) override;
  // slurmctld's RebootProgram (slurm_load_ctl_conf), "" when it has none: whether a cure's reboot can
  // run here (reboot, and `healthd --check-config`).
  SlurmResult<std::string> reboot_program();

  // Hears of every call to Slurm, once it is over, on the caller's thread (the metrics' latency):
  // the call's name ("load_node", "load_nodes", "load_job", "update_node", "reboot", "requeue",
  // "update_job", "kill_job", "signal_job", "load_steps", "kill_step", "load_ctl_conf"), how long the caller waited (up to the deadline), and
  // whether Slurm answered (an error answer counts as answered; a deadline passed or no slurmctld
  // to reach does not). Set before the first call; it must not block.
  using CallObserver = std::function<void(std::string_view call, std::chrono::duration<double> took, bool answered)>;
  void set_call_observer(CallObserver observer) { observer_ = std::move(observer); }

 private:
  // Runs fn on the worker (libslurm initialised there first), bounded by the deadline, and tells the
  // observer about it as `name`.
  template <class T>
  SlurmResult<T> call(std::string_view name, const std::string& what, std::function<SlurmResult<T>()> fn);
  void observe(std::string_view call, std::chrono::steady_clock::time_point started, bool answered) const;

  std::string scontrol_;
  std::chrono::milliseconds timeout_;
  BoundedCaller caller_;
  CallObserver observer_;
};

}  // namespace ar::healthd
