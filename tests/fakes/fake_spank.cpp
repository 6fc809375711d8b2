#include "fake_spank.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <sys/types.h>

#include "plugin_state.hpp"

struct spank_handle {
  int unused = 0;
};

namespace ar::test {
namespace {

FakeSpank the_fake;
spank_handle the_handle;
std::mutex errors_mutex;  // slurm_error may be called from any thread of the test process

}  // namespace

FakeSpank& fake_spank() { return the_fake; }

void reset_fake_spank(FakeSpank fresh) {
  the_fake = std::move(fresh);
  plugin::reset_state();
}

spank_t fake_spank_handle() { return &the_handle; }

int FakeSpank::give_option(const std::string& name, const char* value, bool remote) {
  for (auto* opt : options)
    if (name == opt->name) return opt->cb(opt->val, value, remote ? 1 : 0);
  return -100;
}

std::optional<std::string> FakeSpank::env_value(const std::string& name) const {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

}  // namespace ar::test

namespace ar::plugin {

std::optional<JobFacts> read_job(std::uint32_t job_id) {
  auto& f = test::fake_spank();
  ++f.job_reads;
  auto it = f.jobs.find(job_id);
  if (it == f.jobs.end()) return std::nullopt;
  return it->second;
}

}  // namespace ar::plugin

namespace {
// SPANK's codes are slurm_err_t; ESPANK_SUCCESS is a plain 0.
spank_err_t answer(int code) { return static_cast<spank_err_t>(code); }
}  // namespace

extern "C" {

spank_context_t spank_context(void) { return ar::test::fake_spank().context; }

spank_err_t spank_option_register(spank_t, struct spank_option* opt) {
  ar::test::fake_spank().options.push_back(opt);
  return answer(ESPANK_SUCCESS);
}

spank_err_t spank_get_item(spank_t, spank_item_t item, ...) {
  auto& items = ar::test::fake_spank().items;
  auto it = items.find(item);
  if (it == items.end()) return answer(ESPANK_NOT_AVAIL);
  va_list ap;
  // spank.h fixes the signature: the last named parameter is an enum, which clang warns undergoes
  // promotion. Slurm's own spank_get_item does the same; an enum's promotion is to int, its
  // underlying type here, so the va_list is read as it was passed.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wvarargs"
#endif
  va_start(ap, item);
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
  switch (item) {
    case S_JOB_UID: *va_arg(ap, uid_t*) = static_cast<uid_t>(it->second); break;
    case S_TASK_ID:
    case S_TASK_EXIT_STATUS: *va_arg(ap, int*) = static_cast<int>(it->second); break;
    default: *va_arg(ap, std::uint32_t*) = static_cast<std::uint32_t>(it->second); break;
  }
  va_end(ap);
  return answer(ESPANK_SUCCESS);
}

spank_err_t spank_getenv(spank_t, const char* var, char* buf, int len) {
  auto value = ar::test::fake_spank().env_value(var);
  if (!value) return answer(ESPANK_ENV_NOEXIST);
  if (static_cast<int>(value->size()) >= len) return answer(ESPANK_NOSPACE);
  std::memcpy(buf, value->c_str(), value->size() + 1);
  return answer(ESPANK_SUCCESS);
}

spank_err_t spank_setenv(spank_t, const char* var, const char* val, int overwrite) {
  auto& env = ar::test::fake_spank().env;
  if (!overwrite && env.count(var)) return answer(ESPANK_ENV_EXISTS);
  env[var] = val;
  return answer(ESPANK_SUCCESS);
}

spank_err_t spank_unsetenv(spank_t, const char* var) {
  ar::test::fake_spank().env.erase(var);
  return answer(ESPANK_SUCCESS);
}

void slurm_error(const char* format, ...) {
  char line[4096];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  std::lock_guard lock(ar::test::errors_mutex);
  ar::test::fake_spank().errors.emplace_back(line);
}

}  // extern "C"
