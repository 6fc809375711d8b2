#include "slurm_api_client.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <csignal>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "auto_resume/slurm_series.hpp"
#include "runtime/process.hpp"
#include "slurm_records.hpp"

namespace ar::healthd {
namespace {

// Where libslurm would find slurm.conf, in its own order (read_config.c, _establish_config_source):
// SLURM_CONF, the built-in path, slurmd's configless cache. Empty when none exists.
std::string slurm_conf_source() {
  if (const char* env = std::getenv("SLURM_CONF"); env != nullptr && *env != '\0')
    return access(env, R_OK) == 0 ? std::string(env) : std::string();
  for (const char* path : {"/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf"})
    if (access(path, R_OK) == 0) return path;
  return {};
}

// libslurm reads slurm.conf once per process. Without one it would end the process (its config loader
// calls fatal()), so healthd looks first and answers "not answering" until a file is there.
std::optional<SlurmError> init_libslurm() {
  static std::mutex m;  // one client per daemon, but a process may hold more (the benchmark)
  static bool done = false;
  std::lock_guard lock(m);
  if (done) return std::nullopt;
  if (slurm_conf_source().empty())
    return SlurmError(SlurmError::Kind::not_answering,
                      "no slurm.conf to find slurmctld with (SLURM_CONF unset or unreadable, no /etc/slurm/slurm.conf, "
                      "no configless cache in /run/slurm/conf)");
  slurm_init(nullptr);
  done = true;
  return std::nullopt;
}

// libslurm reports its errors in errno on every series (22.05's slurm_get_errno() returned errno; 24.11
// removed it).
int last_error() { return errno; }

// libslurm's char* fields are not const; the strings are only read for the request.
char* c_str(const std::string& s) { return const_cast<char*>(s.c_str()); }

SlurmResult<void> checked(const std::string& what, int rc) {
  if (rc == SLURM_SUCCESS) return {};
  return std::unexpected(slurm_error(what, last_error()));
}

int signal_number(const std::string& name) {
  static const std::map<std::string, int> kSignals = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
                                                      {"INT", SIGINT},   {"HUP", SIGHUP},   {"QUIT", SIGQUIT},
                                                      {"CONT", SIGCONT}, {"URG", SIGURG},   {"ALRM", SIGALRM}};
  auto it = kSignals.find(name);
  return it == kSignals.end() ? 0 : it->second;
}

// Node records with the partitions each node is in (slurm_load_node does not fill that field).
struct NodeTable {
  node_info_msg_t* nodes = nullptr;
  partition_info_msg_t* parts = nullptr;
  ~NodeTable() {
    if (nodes) slurm_free_node_info_msg(nodes);
    if (parts) slurm_free_partition_info_msg(parts);
  }
};

SlurmResult<void> load_partitions_into(NodeTable& t, const std::string& what) {
  if (slurm_load_partitions(0, &t.parts, SHOW_ALL) != SLURM_SUCCESS)
    return std::unexpected(slurm_error(what + " (partitions)", last_error()));
  slurm_populate_node_partitions(t.nodes, t.parts);
  return {};
}

}  // namespace

SlurmError slurm_error(const std::string& what, int code) {
  using Kind = SlurmError::Kind;
  Kind kind = Kind::other;
  switch (code) {
    case ESLURM_INVALID_JOB_ID:
    case ESLURM_INVALID_NODE_NAME:
    case ESLURM_ALREADY_DONE:
    // An update of a job that has ended (Slurm 24.11 and 26.05 answer it for an admin comment too;
    // 22.05 took the comment): nothing left to change, as for a job that is gone.
    case ESLURM_JOB_FINISHED: kind = Kind::gone; break;
    case ESLURM_DISABLED:
    case ESLURM_ACCESS_DENIED:
    case ESLURM_BATCH_ONLY:
    case ESLURM_NOT_SUPPORTED: kind = Kind::refused; break;
    case ESLURM_IN_STANDBY_MODE:
    case ESLURM_IN_STANDBY_USE_BACKUP:
    case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
    case ETIMEDOUT:
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case EAGAIN:
    case EINTR: kind = Kind::not_answering; break;
    default:
      // 1000-1099: messages to any daemon; 1800-1899: to slurmctld (connection, send, receive).
      if ((code >= SLURM_UNEXPECTED_MSG_ERROR && code < SLURM_UNEXPECTED_MSG_ERROR + 100) ||
          (code >= SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR && code < SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR + 100))
        kind = Kind::not_answering;
  }
  const char* words = slurm_strerror(code);
  return SlurmError(kind, what + ": " + (words ? words : "error " + std::to_string(code)), code);
}

SlurmApiClient::SlurmApiClient(std::string scontrol, std::chrono::milliseconds timeout)
    : scontrol_(std::move(scontrol)), timeout_(timeout), caller_(timeout) {
  // libslurm's first initialisation sets SLURM_CONF in the environment (setenv): done now, while the
  // daemon has few threads, rather than beside one that reads the environment.
  (void)caller_.run<bool>("initialise libslurm", [] { return !init_libslurm().has_value(); });
}

void SlurmApiClient::observe(std::string_view call, std::chrono::steady_clock::time_point started, bool answered) const {
  if (observer_) observer_(call, std::chrono::steady_clock::now() - started, answered);
}

template <class T>
SlurmResult<T> SlurmApiClient::call(std::string_view name, const std::string& what, std::function<SlurmResult<T>()> fn) {
  const auto started = std::chrono::steady_clock::now();
  auto r = caller_.run<SlurmResult<T>>(what, [fn = std::move(fn), what]() -> SlurmResult<T> {
    if (auto missing = init_libslurm()) return std::unexpected(SlurmError(missing->kind, what + ": " + missing->message));
    return fn();
  });
  if (!r) {
    observe(name, started, false);
    return std::unexpected(SlurmError(SlurmError::Kind::not_answering, r.error()));
  }
  // An error answer is an answer; "not answering" (no slurmctld, a communication error) is not.
  observe(name, started, r->has_value() || r->error().kind != SlurmError::Kind::not_answering);
  return std::move(*r);
}

SlurmResult<NodeInfo> SlurmApiClient::node(const std::string& name) {
  const std::string what = "load node " + name;
  return call<NodeInfo>("load_node", what, [name, what]() -> SlurmResult<NodeInfo> {
    NodeTable t;
    if (slurm_load_node_single(&t.nodes, c_str(name), SHOW_ALL) != SLURM_SUCCESS)
      return std::unexpected(slurm_error(what, last_error()));
    if (t.nodes == nullptr || t.nodes->record_count == 0 || t.nodes->node_array[0].name == nullptr)
      return std::unexpected(SlurmError(SlurmError::Kind::gone, what + ": Slurm has no node of that name",
                                        ESLURM_INVALID_NODE_NAME));
    if (auto p = load_partitions_into(t, what); !p) return std::unexpected(p.error());
    return to_node_info(t.nodes->node_array[0]);
  });
}

SlurmResult<std::vector<NodeInfo>> SlurmApiClient::node_table() {
  const std::string what = "load the node table";
  return call<std::vector<NodeInfo>>("load_nodes", what, [what]() -> SlurmResult<std::vector<NodeInfo>> {
    NodeTable t;
    if (slurm_load_node(0, &t.nodes, SHOW_ALL) != SLURM_SUCCESS) return std::unexpected(slurm_error(what, last_error()));
    if (auto p = load_partitions_into(t, what); !p) return std::unexpected(p.error());
    std::vector<NodeInfo> out;
    out.reserve(t.nodes->record_count);
    for (std::uint32_t i = 0; i < t.nodes->record_count; ++i) {
      if (t.nodes->node_array[i].name == nullptr) continue;  // a hole in the node table (FUTURE/cloud)
      out.push_back(to_node_info(t.nodes->node_array[i]));
    }
    return out;
  });
}

SlurmResult<JobInfo> SlurmApiClient::job(std::uint32_t job_id) {
  const std::string what = "load job " + std::to_string(job_id);
  return call<JobInfo>("load_job", what, [job_id, what]() -> SlurmResult<JobInfo> {
    job_info_msg_t* msg = nullptr;
    // SHOW_LOCAL: the job runs on this node, so in this cluster; without it libslurm asks slurmctld for
    // the federation first, an RPC more for every read (bench/scale.sh).
    if (slurm_series::load_job(&msg, job_id, SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS) return std::unexpected(slurm_error(what, last_error()));
    SlurmResult<JobInfo> r = std::unexpected(SlurmError(SlurmError::Kind::gone, what + ": no such job", ESLURM_INVALID_JOB_ID));
    // A job array or het job answers several records; healthd asks for plain job ids.
    for (std::uint32_t i = 0; msg && i < msg->record_count; ++i)
      if (msg->job_array[i].job_id == job_id) {
        r = to_job_info(msg->job_array[i]);
        break;
      }
    slurm_free_job_info_msg(msg);
    return r;
  });
}

namespace {

SlurmResult<void> update_node(const std::string& what, const std::string& node, std::uint32_t state,
                              const std::string* reason) {
  update_node_msg_t msg;
  slurm_init_update_node_msg(&msg);
  msg.node_names = c_str(node);
  msg.node_state = state;
  if (reason) {
    msg.reason = c_str(*reason);
    slurm_series::set_reason_uid(msg, getuid());
  }
  return checked(what, slurm_update_node(&msg));
}

}  // namespace

SlurmResult<void> SlurmApiClient::drain(const std::string& node, const std::string& reason) {
  const std::string what = "drain node " + node;
  return call<void>("update_node", what, [=] { return update_node(what, node, NODE_STATE_DRAIN, &reason); });
}

SlurmResult<void> SlurmApiClient::resume(const std::string& node) {
  const std::string what = "resume node " + node;
  return call<void>("update_node", what, [=] { return update_node(what, node, NODE_RESUME, nullptr); });
}

SlurmResult<void> SlurmApiClient::set_reason(const std::string& node, const std::string& reason) {
  const std::string what = "set the reason of node " + node;
  return call<void>("update_node", what, [=] { return update_node(what, node, NO_VAL, &reason); });
}

SlurmResult<std::string> SlurmApiClient::reboot_program() {
  const std::string what = "load slurmctld's configuration";
  return call<std::string>("load_ctl_conf", what, [what]() -> SlurmResult<std::string> {
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS) return std::unexpected(slurm_error(what, last_error()));
    std::string program = conf && conf->reboot_program ? conf->reboot_program : "";
    slurm_series::free_ctl_conf(conf);
    return program;
  });
}

SlurmResult<void> SlurmApiClient::reboot(const std::string& node, const std::string& reason) {
  // No reboot call in libslurm 22.05 (see the header): scontrol, whose exit status is all that is read.
  //
  // The node must come back drained, not in service: healthd judges it first (issue 31). scontrol
  // 22.05 takes nextstate=RESUME or DOWN only ("Valid states: DOWN, RESUME" for DRAIN), and its ASAP
  // sets nextstate=RESUME by itself (seen on the test cluster: NextState=RESUME, IDLE after the
  // reboot). DOWN would lose the drain and append to the reason. So the node is drained here with
  // healthd's reason, then rebooted without ASAP or nextstate: Slurm reboots it once idle (drained,
  // nothing new lands) and it registers back IDLE+DRAIN, the reason kept (Slurm appends
  // " : reboot issued"), which healthd returns as its own drain once healthy.
  const std::string what = "scontrol reboot " + node;
  // A cluster without a RebootProgram cannot reboot at all: said as such (not_set_up), so the cure
  // does not count it as a reboot that was tried. slurmctld's own configuration is what it acts on;
  // when it cannot be read, scontrol's refusal tells the same (scontrol checks its copy of slurm.conf).
  if (auto program = reboot_program(); program && program->empty())
    return std::unexpected(SlurmError(SlurmError::Kind::not_set_up, what + ": slurm.conf has no RebootProgram"));
  if (auto drained = drain(node, reason); !drained) return drained;
  const auto started = std::chrono::steady_clock::now();
  auto r = run_process({scontrol_, "reboot", "reason=" + reason, node}, timeout_);
  // scontrol's exit status says no more than that it ran to its end: counted as an answer.
  observe("reboot", started, r && !r->timed_out);
  if (!r) return std::unexpected(SlurmError(what + ": " + r.error()));
  if (r->timed_out)
    return std::unexpected(SlurmError(SlurmError::Kind::not_answering,
                                      what + ": Slurm did not answer within " + std::to_string(timeout_.count()) + " ms"));
  if (r->exit_code != 0) {
    std::string err = r->err.empty() ? r->out : r->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    // scontrol's own words for a slurm.conf without RebootProgram (scontrol/reboot_node.c).
    if (err.find("RebootProgram isn't defined") != std::string::npos)
      return std::unexpected(SlurmError(SlurmError::Kind::not_set_up, what + ": slurm.conf has no RebootProgram"));
    return std::unexpected(SlurmError(what + ": " + (err.empty() ? "exit " + std::to_string(r->exit_code) : err)));
  }
  return {};
}

SlurmResult<void> SlurmApiClient::requeue(std::uint32_t job_id) {
  const std::string what = "requeue job " + std::to_string(job_id);
  return call<void>("requeue", what, [=] { return checked(what, slurm_series::requeue(job_id, 0)); });
}

SlurmResult<void> SlurmApiClient::update_job(std::uint32_t job_id, const JobUpdate& u) {
  const std::string what = "update job " + std::to_string(job_id);
  return call<void>("update_job", what, [=] {
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    slurm_series::set_job_id(d, job_id);
    // 0 would mean "no change"; a time past is replaced by slurmctld's own now.
    if (u.begin) d.begin_time = *u.begin > 0 ? *u.begin : 1;
    if (u.priority) d.priority = *u.priority;
    if (u.reset_priority) d.priority = INFINITE;
    if (u.admin_comment) d.admin_comment = c_str(*u.admin_comment);
    // Comma-separated is what slurmctld reads; it builds the ranges itself.
    std::string nodes;
    if (u.nodes) {
      for (const auto& n : *u.nodes) nodes += (nodes.empty() ? "" : ",") + n;
      d.req_nodes = c_str(nodes);
    }
    std::string excluded;
    if (u.excluded) {
      for (const auto& n : *u.excluded) excluded += (excluded.empty() ? "" : ",") + n;
      d.exc_nodes = c_str(excluded);
    }
    return checked(what, slurm_update_job(&d));
  });
}

SlurmResult<void> SlurmApiClient::cancel(std::uint32_t job_id) {
  const std::string what = "cancel job " + std::to_string(job_id);
  return call<void>("kill_job", what, [=] { return checked(what, slurm_series::kill_job(job_id, SIGKILL, 0)); });
}

SlurmResult<std::vector<StepInfo>> SlurmApiClient::job_steps(std::uint32_t job_id) {
  const std::string what = "load the steps of job " + std::to_string(job_id);
  return call<std::vector<StepInfo>>("load_steps", what, [job_id, what]() -> SlurmResult<std::vector<StepInfo>> {
    job_step_info_response_msg_t* msg = nullptr;
    if (slurm_series::load_job_steps(job_id, &msg, SHOW_ALL) != SLURM_SUCCESS)
      return std::unexpected(slurm_error(what, last_error()));
    std::vector<StepInfo> steps;
    for (std::uint32_t i = 0; msg && i < msg->job_step_count; ++i)
      if (msg->job_steps[i].step_id.job_id == job_id) steps.push_back(to_step_info(msg->job_steps[i]));
    slurm_free_job_step_info_response_msg(msg);
    return steps;
  });
}

SlurmResult<void> SlurmApiClient::kill_step(std::uint32_t job_id, std::uint32_t step_id) {
  const std::string what = "kill step " + std::to_string(job_id) + "." + std::to_string(step_id);
  return call<void>("kill_step", what, [=] { return checked(what, slurm_series::kill_step(job_id, step_id, SIGKILL)); });
}

SlurmResult<void> SlurmApiClient::signal_job(std::uint32_t job_id, const std::string& signal) {
  const int sig = signal_number(signal);
  const std::string what = "signal job " + std::to_string(job_id) + " with SIG" + signal;
  if (sig == 0) return std::unexpected(SlurmError(what + ": not a signal healthd sends"));
  // The steps' tasks, then the batch shell alone: every process of the job sees it once. (Signalling
  // the batch shell's whole tree would reach srun too, which forwards it: the tasks would get it twice.)
  return call<void>("signal_job", what, [=]() -> SlurmResult<void> {
    if (auto r = checked(what + " (steps)", slurm_series::kill_job(job_id, static_cast<std::uint16_t>(sig), KILL_STEPS_ONLY)); !r)
      return r;
    return checked(what + " (batch script)", slurm_series::kill_job(job_id, static_cast<std::uint16_t>(sig), KILL_JOB_BATCH));
  });
}

}  // namespace ar::healthd
