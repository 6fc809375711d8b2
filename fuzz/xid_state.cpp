// The XID check's remembered events (healthd/checks/xid_check: the state file read by the XidCheck
// constructor, with the boot id that decides which faults a reboot cured). Properties: never a crash
// or undefined behaviour; the events it restores can be judged and reported.
#include "checks/gpu/xid_check.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const auto& dir = ar::fuzz::temp_dir();
  const auto state = dir / "xid.json";
  const auto boot_id = dir / "boot_id";
  ar::fuzz::write_file(boot_id, "0f6f3c3e-1d2b-4c55-9f1e-2a7d3b4c5d6e\n");
  ar::fuzz::write_file(state, ar::fuzz::as_text(data, size));
  XidCheck check(XidPolicy::defaults(), std::chrono::seconds(600), state, boot_id);
  for (const auto& r : check.run()) (void)r.to_json().dump();
  return 0;
}
