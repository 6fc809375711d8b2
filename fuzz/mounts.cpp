// The mount table parser (healthd/collectors/filesystem: parse_mounts, find_mount), over the text of
// /proc/mounts under the host root. Property: never a crash, whatever the table holds.
#include "collectors/filesystem.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  const auto table = parse_mounts(ar::fuzz::as_text(data, size));
  for (const auto& m : table) {
    (void)m.read_only();
    (void)find_mount(table, m.mount_point);
  }
  (void)find_mount(table, "/");
  return 0;
}
