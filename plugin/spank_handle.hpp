// A thin wrapper over spank_t: turns SPANK's error codes into std::optional so callers read plainly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "host_list.hpp"

// spank.h declares the slurm_spank_* hooks outside its own extern "C" block: include it as C.
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

namespace ar::plugin {

class SpankHandle {
 public:
  explicit SpankHandle(spank_t sp) : sp_(sp) {}

  std::optional<std::uint32_t> u32(spank_item_t item) const {
    std::uint32_t v = 0;
    if (spank_get_item(sp_, item, &v) != ESPANK_SUCCESS) return std::nullopt;
    return v;
  }

  std::optional<int> i32(spank_item_t item) const {
    int v = 0;
    if (spank_get_item(sp_, item, &v) != ESPANK_SUCCESS) return std::nullopt;
    return v;
  }

  struct StepIds {
    std::uint32_t job = 0;
    std::uint32_t step = 0;
  };
  // The job and step ids of this process's step (remote and local contexts); nullopt when Slurm
  // gives either not.
  std::optional<StepIds> step_ids() const {
    auto job = u32(S_JOB_ID);
    auto step = u32(S_JOB_STEPID);
    if (!job || !step) return std::nullopt;
    return StepIds{*job, *step};
  }

  std::optional<std::uint32_t> uid() const {
    uid_t v = 0;
    if (spank_get_item(sp_, S_JOB_UID, &v) != ESPANK_SUCCESS) return std::nullopt;
    return static_cast<std::uint32_t>(v);
  }

  // The step's node list as this node's slurmstepd was handed it, and this node's place in it. The
  // environment's SLURMD_NODENAME cannot be used here: at the hooks' time it is still the value srun
  // inherited from the batch script, i.e. the batch host's name, on every node of the step (and the
  // batch step does not have it yet). The list is the job's environment, which the user can set:
  // start_step checks the name against the job's record. Remote context only.
  std::optional<std::string> node_name_from_env(bool batch_step) const {
    auto node_id = u32(S_JOB_NODEID);
    // The batch step runs on the first node of the job; an srun step's nodes are SLURM_STEP_NODELIST.
    auto list = job_env(batch_step ? "SLURM_JOB_NODELIST" : "SLURM_STEP_NODELIST");
    if (!node_id || !list) return std::nullopt;
    return host_at(*list, *node_id);
  }

  // A variable of the job's environment (remote context only).
  std::optional<std::string> job_env(const char* name) const {
    char buf[1024];
    if (spank_getenv(sp_, name, buf, sizeof(buf)) != ESPANK_SUCCESS) return std::nullopt;
    return std::string(buf);
  }

 private:
  spank_t sp_;
};

}  // namespace ar::plugin
