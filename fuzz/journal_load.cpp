// The action journal's state file (healthd/state/journal: Journal::load), replayed at every start.
// Properties: never a crash or undefined behaviour on any file content.
#include "state/journal.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const auto file = ar::fuzz::temp_dir() / "journal.json";
  ar::fuzz::write_file(file, ar::fuzz::as_text(data, size));
  Journal journal(file);
  if (!journal.load()) return 0;
  for (const auto& e : journal.pending()) {
    (void)journal.has_pending(e.kind, e.job_id, e.restart_count);
    (void)journal.requeued(e.job_id, e.restart_count);
    (void)to_string(e.kind);
  }
  return 0;
}
