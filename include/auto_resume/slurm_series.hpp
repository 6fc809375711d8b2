// Everything that differs between the Slurm series we build against (22.05 to 26.05), in one place:
// the libslurm calls whose signature or types changed, each wrapped once, chosen at compile time from
// SLURM_VERSION_NUMBER. The Slurm adapters (healthd's libslurm client and record reader, the plugin's
// job reader and SPANK handle, the test fake that interposes libslurm) call these and nothing else
// tests the series. Read from each series' own slurm.h (SchedMD's tags slurm-22-05 ... slurm-26-05).
//
// Both the plugin (built into slurmstepd's process) and healthd include this: header-only, no state.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <sys/types.h>

extern "C" {
#include <slurm/slurm.h>
}

#if !defined(SLURM_VERSION_NUMBER) || SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0)
#error "auto-resume builds against Slurm 22.05 or newer (slurm/slurm_version.h)"
#endif

namespace ar::slurm_series {

// The series this was compiled against, "26.05": what --version and the package name say.
inline std::string compiled_series() {
  const unsigned major = SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER);
  const unsigned minor = SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);
  return std::to_string(major) + (minor < 10 ? ".0" : ".") + std::to_string(minor);
}

// --- Naming a job --------------------------------------------------------------------------------
// 26.05: slurm_load_job, slurm_requeue, slurm_kill_job and slurm_signal_job take a slurm_step_id_t
// (a job can be named by its SLUID); before, a plain job id. slurm.h's own bridge is a C11 _Generic
// macro, which C++ cannot use. JobRef is the type those calls take in this series.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
using JobRef = slurm_step_id_t;
#else
using JobRef = std::uint32_t;
#endif

// A whole job (every step), by its id. Value-initialised first: a series' fields we do not name
// (the SLUID) are zero, which libslurm reads as "not given".
inline slurm_step_id_t whole_job_step_id(std::uint32_t job_id) {
  slurm_step_id_t id{};
  id.job_id = job_id;
  id.step_het_comp = NO_VAL;
  id.step_id = NO_VAL;
  return id;
}

inline JobRef job_ref(std::uint32_t job_id) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
  return whole_job_step_id(job_id);
#else
  return job_id;
#endif
}

inline std::uint32_t job_number(const JobRef& ref) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
  return ref.job_id;
#else
  return ref;
#endif
}

inline int load_job(job_info_msg_t** resp, std::uint32_t job_id, std::uint16_t show_flags) {
  return slurm_load_job(resp, job_ref(job_id), show_flags);
}

inline int requeue(std::uint32_t job_id, std::uint32_t flags) { return slurm_requeue(job_ref(job_id), flags); }

inline int kill_job(std::uint32_t job_id, std::uint16_t signal, std::uint16_t flags) {
  return slurm_kill_job(job_ref(job_id), signal, flags);
}

// --- Steps ---------------------------------------------------------------------------------------
// The step signal: 23.11 added a flags argument; 25.11 names the step by a slurm_step_id_t.
inline int kill_step(std::uint32_t job_id, std::uint32_t step_id, std::uint16_t signal) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
  slurm_step_id_t id = whole_job_step_id(job_id);
  id.step_id = step_id;
  return slurm_kill_job_step(&id, signal, 0);
#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
  return slurm_kill_job_step(job_id, step_id, signal, 0);
#else
  return slurm_kill_job_step(job_id, step_id, signal);
#endif
}

// Every step of one job. 25.11 names the job by a slurm_step_id_t (NO_VAL step: all of them).
inline int load_job_steps(std::uint32_t job_id, job_step_info_response_msg_t** resp, std::uint16_t show_flags) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
  slurm_step_id_t id = whole_job_step_id(job_id);
  return slurm_get_job_steps(&id, resp, show_flags);
#else
  return slurm_get_job_steps(0, job_id, NO_VAL, resp, show_flags);
#endif
}

// --- Updates -------------------------------------------------------------------------------------
// 25.11: job_desc_msg_t names the job by step_id (a slurm_step_id_t) instead of job_id.
inline void set_job_id(job_desc_msg_t& d, std::uint32_t job_id) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
  d.step_id = whole_job_step_id(job_id);
#else
  d.job_id = job_id;
#endif
}

inline std::uint32_t job_id_of(const job_desc_msg_t& d) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
  return d.step_id.job_id;
#else
  return d.job_id;
#endif
}

// Who set a node's reason. 26.05 dropped the field: slurmctld takes the caller's uid from its
// credential, which is what we set it to before.
inline void set_reason_uid(update_node_msg_t& msg, uid_t uid) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
  (void)msg;
  (void)uid;
#else
  msg.reason_uid = uid;
#endif
}

// 26.05 renamed slurm_free_ctl_conf to slurm_free_conf.
inline void free_ctl_conf(slurm_conf_t* conf) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
  slurm_free_conf(conf);
#else
  slurm_free_ctl_conf(conf);
#endif
}

// --- Host lists ----------------------------------------------------------------------------------
// 23.11 made hostlist_t the struct itself, used through a pointer; before it was the pointer type.
// A host list owned here, walked or searched without the caller seeing which.
class HostList {
 public:
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
  using Handle = hostlist_t*;
#else
  using Handle = hostlist_t;
#endif

  explicit HostList(const std::string& ranges) : hl_(slurm_hostlist_create(ranges.c_str())) {}
  ~HostList() {
    if (hl_ != nullptr) slurm_hostlist_destroy(hl_);
  }
  HostList(const HostList&) = delete;
  HostList& operator=(const HostList&) = delete;

  // Slurm could not read the ranges (a malformed list).
  bool valid() const { return hl_ != nullptr; }

  // The next name, in the list's order; nullopt at the end.
  std::optional<std::string> shift() {
    if (hl_ == nullptr) return std::nullopt;
    char* name = slurm_hostlist_shift(hl_);
    if (name == nullptr) return std::nullopt;
    std::string out(name);
    std::free(name);  // slurm_hostlist_shift's strings are malloc'd
    return out;
  }

  bool holds(const std::string& name) const { return hl_ != nullptr && slurm_hostlist_find(hl_, name.c_str()) >= 0; }

 private:
  Handle hl_;
};

}  // namespace ar::slurm_series
