// The job registry's state file (healthd/state/job_registry: JobRegistry::load), which the daemon
// reads at every start. Properties: never a crash or undefined behaviour (ids, counts and timestamps
// come from a file anyone who got write access to the state dir could shape); what loads can be
// shown, pruned and written back.
#include <chrono>

#include "fuzz_support.hpp"
#include "state/job_registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const auto file = ar::fuzz::temp_dir() / "jobs.json";
  ar::fuzz::write_file(file, ar::fuzz::as_text(data, size));
  JobRegistry registry(file);
  if (!registry.load()) return 0;
  (void)registry.to_json().dump();
  for (const auto& [id, job] : registry.jobs()) {
    (void)job.running();
    (void)job.auto_resume();
    (void)job.last_activity();
  }
  (void)registry.serialize();
  (void)registry.prune(WallClock::now(), std::chrono::hours(24));
  return 0;
}
