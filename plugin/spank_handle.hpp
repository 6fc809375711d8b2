// A thin wrapper over spank_t: turns SPANK's error codes into std::optional so callers read plainly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

// spank.h declares the slurm_spank_* hooks outside its own extern "C" block: include it as C.
extern "C" {
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

  std::optional<std::uint32_t> uid() const {
    uid_t v = 0;
    if (spank_get_item(sp_, S_JOB_UID, &v) != ESPANK_SUCCESS) return std::nullopt;
    return static_cast<std::uint32_t>(v);
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
