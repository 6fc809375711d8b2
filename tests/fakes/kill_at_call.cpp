// libkill-at-call.so: preloaded into healthd (LD_PRELOAD) by faults.bats, it stands between healthd and
// libslurm so the test can SIGKILL the daemon at an exact point of an incident: just before its Nth
// Slurm call, or just after that call returned. healthd's code is the code it always runs; only the
// library calls are interposed, the way the fake NVML stands in for the driver.
//
// It keeps the files of tests/integration/kill_at_call.sh (which does the same for a forked scontrol,
// healthd's reboot) under $AR_KILL_AT_CALL_DIR/NODE/, sharing its lock and call counter:
//   count, calls.log ("epoch N name args"), kill-at ("N before|after"), kills.log, stop-ctld-at,
//   ctld-stopped
// NODE is the --node of the daemon's command line. Without the variable, or in another process, every
// call goes straight to libslurm.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "auto_resume/slurm_series.hpp"

using ar::slurm_series::JobRef;
using ar::slurm_series::job_number;

namespace {

std::string self_node() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--node") return argv[i + 1];
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void append(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::app) << line << '\n';
}

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

std::string stamp() {
  char b[32];
  std::snprintf(b, sizeof b, "%.9f", now_s());
  return b;
}

void kill_self() {
  // As a crash would: the daemon and its process group (it leads its own).
  if (getpgrp() == getpid()) kill(0, SIGKILL);
  kill(getpid(), SIGKILL);
}

void stop_slurmctld(const std::string& wrap) {
  std::string pid_text = read_file(wrap + "/../run/slurmctld.pid");
  pid_t pid = static_cast<pid_t>(std::atoi(pid_text.c_str()));
  if (pid > 0 && kill(pid, SIGTERM) == 0) {
    for (int i = 0; i < 150; ++i) {
      std::string st = read_file("/proc/" + std::to_string(pid) + "/stat");
      auto paren = st.rfind(") ");
      if (st.empty() || paren == std::string::npos || st[paren + 2] == 'Z') break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

// One interposed call: counts it, and says whether to kill after it. Kills before it, or stops
// slurmctld before it, when the test asked so.
struct Call {
  std::string what;
  std::string dir, wrap;
  int n = 0;
  std::string fire;

  explicit Call(const std::string& call) : what(call) {
    const char* w = std::getenv("AR_KILL_AT_CALL_DIR");
    static const std::string node = self_node();  // the daemon's --node does not change
    if (!w || node.empty()) return;
    wrap = w;
    dir = wrap + "/" + node;
    std::string mk = "mkdir -p '" + dir + "'";
    if (access(dir.c_str(), F_OK) != 0 && std::system(mk.c_str()) != 0) return;
    int lock = open((dir + "/lock").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (lock < 0) return;
    flock(lock, LOCK_EX);
    n = std::atoi(read_file(dir + "/count").c_str()) + 1;
    std::ofstream(dir + "/count") << n << '\n';
    bool stop_ctld = false;
    {
      std::istringstream kill_at(read_file(dir + "/kill-at"));
      int at = 0;
      std::string when;
      if (kill_at >> at && at == n) {
        if (!(kill_at >> when)) when = "before";
        fire = when;
        unlink((dir + "/kill-at").c_str());
      }
      std::istringstream stop_at(read_file(dir + "/stop-ctld-at"));
      if (stop_at >> at && at == n) {
        stop_ctld = true;
        unlink((dir + "/stop-ctld-at").c_str());
      }
    }
    append(dir + "/calls.log", stamp() + " " + std::to_string(n) + " " + what);
    close(lock);
    if (stop_ctld) {
      stop_slurmctld(wrap);
      append(dir + "/ctld-stopped", stamp() + " stopped slurmctld before call " + std::to_string(n) + ": " + what);
    }
    if (fire == "before") {
      append(dir + "/kills.log", stamp() + " killed before call " + std::to_string(n) + ": " + what);
      kill_self();
    }
  }
  void after() const {
    if (fire == "after") {
      append(dir + "/kills.log", stamp() + " killed after call " + std::to_string(n) + ": " + what);
      kill_self();
    }
  }
};

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

std::string node_state_word(std::uint32_t s) {
  if (s == NO_VAL) return "";
  if (s & NODE_RESUME) return " state=resume";
  if (s & NODE_STATE_DRAIN) return " state=drain";
  return " state=" + std::to_string(s);
}

}  // namespace

extern "C" {

// Each in the signature of the series built against (JobRef: see slurm_series.hpp).
__attribute__((visibility("default"))) int slurm_load_job(job_info_msg_t** resp, JobRef job, uint16_t show_flags) {
  Call c("load_job " + std::to_string(job_number(job)));
  int rc = real<int (*)(job_info_msg_t**, JobRef, uint16_t)>("slurm_load_job")(resp, job, show_flags);
  c.after();
  return rc;
}

__attribute__((visibility("default"))) int slurm_load_node_single(node_info_msg_t** resp, char* node_name, uint16_t show_flags) {
  Call c(std::string("load_node ") + (node_name ? node_name : ""));
  int rc = real<int (*)(node_info_msg_t**, char*, uint16_t)>("slurm_load_node_single")(resp, node_name, show_flags);
  c.after();
  return rc;
}

__attribute__((visibility("default"))) int slurm_load_node(time_t t, node_info_msg_t** resp, uint16_t show_flags) {
  Call c("load_nodes");
  int rc = real<int (*)(time_t, node_info_msg_t**, uint16_t)>("slurm_load_node")(t, resp, show_flags);
  c.after();
  return rc;
}

__attribute__((visibility("default"))) int slurm_load_partitions(time_t t, partition_info_msg_t** resp, uint16_t show_flags) {
  Call c("load_partitions");
  int rc = real<int (*)(time_t, partition_info_msg_t**, uint16_t)>("slurm_load_partitions")(t, resp, show_flags);
  c.after();
  return rc;
}

__attribute__((visibility("default"))) int slurm_update_node(update_node_msg_t* msg) {
  Call c(std::string("update_node nodename=") + (msg->node_names ? msg->node_names : "") + node_state_word(msg->node_state) +
         (msg->reason ? std::string(" reason=") + msg->reason : ""));
  int rc = real<int (*)(update_node_msg_t*)>("slurm_update_node")(msg);
  c.after();
  return rc;
}

__attribute__((visibility("default"))) int slurm_update_job(job_desc_msg_t* d) {
  std::string what = "update_job jobid=" + std::to_string(ar::slurm_series::job_id_of(*d));
  if (d->begin_time) what += " starttime=" + std::to_string(d->begin_time);
  if (d->priority != NO_VAL) what += " priority=" + std::to_string(d->priority);
  if (d->admin_comment) what += std::string(" admincomment=") + d->admin_comment;
  Call c(what);
  int rc = real<int (*)(job_desc_msg_t*)>("slurm_update_job")(d);
  c.after();
  return rc;
}

__attribute__((visibility("default"))) int slurm_requeue(JobRef job, uint32_t flags) {
  Call c("requeue " + std::to_string(job_number(job)) + " ");
  int rc = real<int (*)(JobRef, uint32_t)>("slurm_requeue")(job, flags);
  c.after();
  return rc;
}

__attribute__((visibility("default"))) int slurm_kill_job(JobRef job, uint16_t signal, uint16_t flags) {
  Call c("kill_job " + std::to_string(job_number(job)) + " signal=" + std::to_string(signal) + " flags=" + std::to_string(flags));
  int rc = real<int (*)(JobRef, uint16_t, uint16_t)>("slurm_kill_job")(job, signal, flags);
  c.after();
  return rc;
}

}  // extern "C"
