// The kernel-log record reader (healthd/collectors/kernel_log_reader): the input as one /dev/kmsg
// record (what one read() returns), and as a file of lines read by a KernelLogReader, the way healthd
// reads a forwarded log. Properties: never a crash; every record has a level 0-7 and the facility its
// prefix gave (at most 255), its text within kMaxLineBytes and already clean (sanitize() leaves it as
// it is: valid UTF-8 without control characters, so it can reach a reply, a Slurm reason or a state
// file); a record comes only from a line with a priority, so records and lines without one together
// are never more than the lines.
#include <algorithm>
#include <cstdlib>

#include "collectors/kernel_log_reader.hpp"
#include "fuzz_support.hpp"
#include "text/text.hpp"

namespace {

void check(const ar::healthd::KernelRecord& r) {
  using ar::healthd::KernelLogReader;
  if (r.level < 0 || r.level > 7) std::abort();
  if (r.facility < 0 || r.facility > 255) std::abort();
  if (r.text.size() > KernelLogReader::kMaxLineBytes) std::abort();
  if (ar::healthd::sanitize(r.text) != r.text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const auto text = ar::fuzz::as_text(data, size);
  if (auto record = parse_kmsg_record(text)) check(*record);
  if (auto record = parse_log_line(text.substr(0, text.find('\n')))) check(*record);

  // A log that appears after the reader was made is read from its start.
  static const auto log = ar::fuzz::temp_dir() / "kern.log";
  std::filesystem::remove(log);
  KernelLogReader reader(log);
  if (reader.open()) std::abort();  // there is no file yet
  ar::fuzz::write_file(log, text);
  auto records = reader.read_new();
  if (!records) std::abort();
  for (const auto& r : *records) check(r);
  // Lines: each newline ends one; a last line without one is taken once it reaches kMaxLineBytes.
  std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  if (records->size() + reader.without_priority() > lines) std::abort();
  return 0;
}
