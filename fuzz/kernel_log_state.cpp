// The kernel-log check's remembered faults (healthd/checks/kernel_log_check: the state file read by
// the KernelLogCheck constructor). Properties: never a crash or undefined behaviour (its timestamps
// are turned into steady-clock times); the faults it restores can be judged and reported.
#include "checks/kernel_log/kernel_log_check.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const auto& root = ar::fuzz::temp_dir();
  const auto state = root / "kernel_log.json";
  ar::fuzz::write_file(root / "kmsg", "");
  ar::fuzz::write_file(state, ar::fuzz::as_text(data, size));
  KernelLogConfig config;
  config.path = "/kmsg";  // a plain file under the host root: file mode of the reader
  KernelLogCheck check(config, root, state);
  for (const auto& r : check.run()) (void)r.to_json().dump();
  return 0;
}
