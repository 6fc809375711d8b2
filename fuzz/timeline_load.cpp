// The job timeline's state file (healthd/state/timeline: Timeline::load), read at every start and
// shown by `healthctl explain`. Properties: never a crash or undefined behaviour; what loads can be
// sent in a reply.
#include "state/timeline.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const auto file = ar::fuzz::temp_dir() / "timeline.json";
  ar::fuzz::write_file(file, ar::fuzz::as_text(data, size));
  Timeline timeline(file);
  if (!timeline.load()) return 0;
  // The job ids the seeds use; explain of any other id takes the same path.
  for (std::uint32_t id : {0u, 1u, 42u, 4294967295u}) (void)timeline.to_json(id).dump();
  return 0;
}
