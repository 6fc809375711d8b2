// The recording Slurm and the responder fixture that responder_test.cpp and cure_test.cpp share: a
// fake slurmctld that records every call (and can die at any of them), and a node n2 with job 7.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/responder.hpp"
#include "temp_dir.hpp"

namespace ar::healthd::test {

using namespace std::chrono_literals;

// Thrown by the fake at a chosen Slurm call: the daemon dies there (SIGKILL), before or after the call.
struct Killed {};

class FakeSlurm : public SlurmClient {
 public:
  std::map<std::string, NodeInfo> nodes;
  std::map<std::uint32_t, JobInfo> jobs;
  std::vector<std::string> calls;
  bool answering = true;
  bool drain_fails = false;
  bool release_starts_job = true;
  // A requeued job shows COMPLETING for this many reads before PENDING, as slurmctld's does.
  int completing_reads = 0;
  std::map<std::uint32_t, int> completing_left;
  // Every Slurm call is numbered; at kill_at the daemon dies, before the call or just after it.
  int call_no = 0;
  int kill_at = 0;
  bool kill_after = false;
  void before() {
    ++call_no;
    if (call_no == kill_at && !kill_after) throw Killed{};
  }
  void after() {
    if (call_no == kill_at && kill_after) throw Killed{};
  }

  // How long a call takes to fail while Slurm is not answering (a slurmctld down or hung).
  std::chrono::milliseconds fail_after{0};
  void fail_slowly() const {
    if (!answering && fail_after.count() > 0) std::this_thread::sleep_for(fail_after);
  }
  SlurmResult<NodeInfo> node(const std::string& name) override {
    before();
    fail_slowly();
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    auto it = nodes.find(name);
    if (it == nodes.end()) return std::unexpected(SlurmError(SlurmError::Kind::gone, "Invalid node name specified"));
    auto n = it->second;
    after();
    return n;
  }
  int table_reads = 0;  // whole node-table reads (what a fabric-wide event multiplies)
  SlurmResult<std::vector<NodeInfo>> node_table() override {
    before();
    fail_slowly();
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    ++table_reads;
    std::vector<NodeInfo> out;
    for (auto& [n, i] : nodes) out.push_back(i);
    after();
    return out;
  }
  SlurmResult<JobInfo> job(std::uint32_t id) override {
    before();
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    if (!jobs.count(id)) return std::unexpected(SlurmError(SlurmError::Kind::gone, "Invalid job id specified"));
    if (jobs[id].state == "COMPLETING" && --completing_left[id] <= 0) jobs[id].state = "PENDING";
    auto j = jobs.at(id);
    after();
    return j;
  }
  SlurmResult<void> drain(const std::string& n, const std::string& reason) override {
    before();
    if (drain_fails || !answering)
      return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Unable to contact slurm controller"));
    calls.push_back("drain " + n);
    nodes[n].state = "MIXED+DRAIN";
    nodes[n].drain = true;
    nodes[n].reason = reason;
    nodes[n].reason_time = std::chrono::system_clock::to_time_t(clock);
    if (after_drain) after_drain(n);
    after();
    return {};
  }
  // Runs just after a drain has taken: what other nodes' daemons did in the same instant.
  std::function<void(const std::string&)> after_drain;
  // Another node drained by its own healthd, its reason set `ago` before slurmctld's clock.
  void drained_by_its_healthd(const std::string& n, std::chrono::seconds ago) {
    nodes[n].state = "IDLE+DRAIN";
    nodes[n].drain = true;
    nodes[n].reason = "healthd: EFA-DRIVER-ERR: efa 0000:10:1b.0: Admin command timed out";
    nodes[n].reason_time = std::chrono::system_clock::to_time_t(clock - ago);
  }
  // Another node drained by an admin, its reason set `later` after slurmctld's clock.
  void drained_by_an_admin(const std::string& n, std::chrono::seconds later = std::chrono::seconds(0)) {
    nodes[n].state = "IDLE+DRAIN";
    nodes[n].drain = true;
    nodes[n].reason = "maintenance";
    nodes[n].reason_time = std::chrono::system_clock::to_time_t(clock + later);
  }
  bool reboot_program = true;  // the cluster has a RebootProgram
  SlurmResult<void> reboot(const std::string& n, const std::string& reason) override {
    calls.push_back("reboot " + n);
    if (!reboot_program)
      return std::unexpected(SlurmError(SlurmError::Kind::not_set_up, "scontrol reboot ASAP " + n + ": slurm.conf has no RebootProgram"));
    nodes[n].state = "MIXED+DRAIN+REBOOT_REQUESTED";
    nodes[n].drain = nodes[n].reboot = true;
    nodes[n].reason = reason;
    nodes[n].reason_time = std::chrono::system_clock::to_time_t(clock);
    return {};
  }
  // The node is back from its reboot, as slurmd's registration leaves it (seen on Slurm 22.05): still
  // drained, its reason kept with Slurm's " : reboot issued" after it, the reboot flags cleared.
  void rebooted(const std::string& n) {
    nodes[n].state = "IDLE+DRAIN";
    nodes[n].reboot = nodes[n].reboot_issued = false;
    nodes[n].reason += " : reboot issued";
  }
  SlurmResult<void> resume(const std::string& n) override {
    calls.push_back("resume " + n);
    nodes[n].state = "IDLE";
    nodes[n].drain = nodes[n].reboot = nodes[n].reboot_issued = false;
    nodes[n].reason.clear();
    return {};
  }
  SlurmResult<void> set_reason(const std::string& n, const std::string& r) override {
    nodes[n].reason = r;
    return {};
  }
  SlurmResult<void> requeue(std::uint32_t id) override {
    before();
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    calls.push_back("requeue " + std::to_string(id));
    if (!jobs[id].requeue) return std::unexpected(SlurmError(SlurmError::Kind::refused, "Requested operation is presently disabled"));
    if (jobs[id].state != "RUNNING") return std::unexpected(SlurmError("Job is pending execution"));
    jobs[id].state = completing_reads > 0 ? "COMPLETING" : "PENDING";
    completing_left[id] = completing_reads;
    jobs[id].restart_count++;
    jobs[id].submit_time = clock;  // slurmctld stamps it when the job leaves COMPLETING
    jobs[id].reason = "BeginTime";  // Slurm's requeue hold, until a scheduling pass judges it again
    after();
    return {};
  }
  SlurmResult<void> update_job(std::uint32_t id, const JobUpdate& u) override {
    before();
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    if (u.admin_comment) {
      jobs[id].admin_comment = *u.admin_comment;
      calls.push_back("comment " + std::to_string(id));
    }
    if (u.priority) {
      jobs[id].priority = *u.priority;
      calls.push_back("priority " + std::to_string(id) + " " + std::to_string(*u.priority));
    }
    if (u.reset_priority) {
      jobs[id].priority = 1;
      calls.push_back("priority " + std::to_string(id) + " reset");
    }
    if (u.nodes) {
      // slurmctld only takes nodes out of a running job, never adds one.
      std::string list;
      for (const auto& n : *u.nodes) {
        if (std::find(jobs[id].nodes.begin(), jobs[id].nodes.end(), n) == jobs[id].nodes.end())
          return std::unexpected(SlurmError(SlurmError::Kind::refused, "Invalid node name specified"));
        list += (list.empty() ? "" : ",") + n;
      }
      for (auto& [sid, step] : steps[id])  // the leaving nodes' tasks are killed; the step stays
        std::erase_if(step.nodes, [&](const std::string& n) { return std::find(u.nodes->begin(), u.nodes->end(), n) == u.nodes->end(); });
      jobs[id].nodes = *u.nodes;
      jobs[id].node_list = list;
      calls.push_back("shrink " + std::to_string(id) + " to " + list);
    }
    if (u.excluded) {  // only a pending job takes a new ExcNodeList (slurmctld refuses it of a running one)
      if (jobs[id].state != "PENDING")
        return std::unexpected(SlurmError(SlurmError::Kind::refused, "Job is no longer pending execution"));
      std::string list;
      for (const auto& n : *u.excluded) list += (list.empty() ? "" : ",") + n;
      jobs[id].excluded = *u.excluded;
      calls.push_back("exclude " + std::to_string(id) + " " + list);
    }
    if (u.begin) {
      calls.push_back("release " + std::to_string(id));
      begins[id] = *u.begin;
      if (jobs[id].state != "PENDING") calls.push_back("release too early " + std::to_string(id));
      else if (release_starts_job) jobs[id].state = "RUNNING";  // an idle cluster starts it at once
    }
    after();
    return {};
  }
  std::map<std::uint32_t, std::time_t> begins;  // the last begin time asked, by job
  WallTime clock{};                              // slurmctld's clock: the test's
  SlurmResult<void> signal_job(std::uint32_t id, const std::string& sig) override {
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    calls.push_back("signal " + std::to_string(id) + " " + sig);
    return {};
  }
  std::map<std::uint32_t, std::map<std::uint32_t, StepInfo>> steps;  // by job, by step id
  SlurmResult<std::vector<StepInfo>> job_steps(std::uint32_t id) override {
    before();
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    std::vector<StepInfo> out;
    for (const auto& [sid, s] : steps[id]) out.push_back(s);
    after();
    return out;
  }
  SlurmResult<void> kill_step(std::uint32_t id, std::uint32_t step) override {
    before();
    if (!answering) return std::unexpected(SlurmError(SlurmError::Kind::not_answering, "Slurm did not answer"));
    calls.push_back("kill step " + std::to_string(id) + "." + std::to_string(step));
    if (!steps[id].erase(step)) return std::unexpected(SlurmError(SlurmError::Kind::gone, "Invalid job id specified"));
    after();
    return {};
  }
  SlurmResult<void> cancel(std::uint32_t id) override {
    calls.push_back("cancel " + std::to_string(id));
    jobs[id].state = "CANCELLED";
    return {};
  }
  int count(const std::string& call) const { return static_cast<int>(std::count(calls.begin(), calls.end(), call)); }
};

// A notice sink that keeps every notice it is given.
struct RecordedNotices : NoticeSink {
  std::vector<Notice> seen;
  void notify(const Notice& n) noexcept override { seen.push_back(n); }
  int count(NoticeKind k) const {
    return static_cast<int>(std::count_if(seen.begin(), seen.end(), [&](const Notice& n) { return n.kind == k; }));
  }
  const Notice* first(NoticeKind k) const {
    for (const auto& n : seen)
      if (n.kind == k) return &n;
    return nullptr;
  }
};

// The kernel-log check's result: healthy, or the fault every test here injects (XID 79).
inline CheckResult kernel_log_result(bool faulty, Remedy action = Remedy::drain) {
  CheckResult r;
  r.check = "kernel_log";
  if (faulty) {
    r.status = Status::fault;
    r.code = "GPU-XID-79";
    r.message = "fallen off the bus";
    r.action = action;
  }
  return r;
}

struct Fixture {
  ar::test::TempDir dir;
  FakeSlurm slurm;
  Journal journal{dir / "journal.json"};
  Timeline timeline{dir / "timeline.json"};
  PolicyConfig policy;
  std::unique_ptr<Responder> responder;
  WallTime now = WallTime(std::chrono::seconds(1'800'000'000));

  explicit Fixture(PolicyConfig p = {}) : policy(p) {
    policy.check_interval = 1s;  // sweep() is one check interval
    for (const char* n : {"n1", "n2", "n3", "n4"}) slurm.nodes[n] = NodeInfo{n, "IDLE", "", {"debug"}};
    slurm.jobs[7] = JobInfo{7, "RUNNING", "", 0, "n[1-2]", ""};
    responder = std::make_unique<Responder>("n2", policy, slurm, journal, timeline);
  }
  // Node `n`'s own healthd drained it in the second of the last sweep (n2's drain, if it made one),
  // after that sweep's looks at the share.
  void drained_in_the_last_sweeps_second(const std::string& n) {
    slurm.clock = now - 1s;
    slurm.drained_by_its_healthd(n, 0s);
  }
  void sweep(bool faulty, std::vector<LocalJob> jobs = {{7, 0, true}}, Remedy action = Remedy::drain) {
    slurm.clock = now;
    responder->on_sweep({kernel_log_result(faulty, action)}, jobs, std::nullopt, now);
    responder->run_due(now);
    responder->follow_requeued(now);
    now += 1s;
  }
};


// One node of a test that runs the responders of several nodes against one FakeSlurm (the suspect
// and straggler tests): its own journal and timeline under `dir`, its responder made by the test.
struct ResponderNode {
  std::string name;
  Journal journal;
  Timeline timeline;
  std::unique_ptr<Responder> responder;
  ResponderNode(std::string n, const std::filesystem::path& dir)
      : name(n), journal(dir / (n + "-journal.json")), timeline(dir / (n + "-timeline.json")) {}
};

}  // namespace ar::healthd::test
