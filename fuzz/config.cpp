// The config loader (healthd/config/config: load_config), on a file, as the daemon reads it at start
// and on `healthctl reload`-style restarts. Properties: never a crash or undefined behaviour; an error
// is a message, never an exception.
#include "config/config.hpp"
#include "checks/registry.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ar::fuzz::quiet_logs();
  const auto file = ar::fuzz::temp_dir() / "healthd.toml";
  ar::fuzz::write_file(file, ar::fuzz::as_text(data, size));
  (void)ar::healthd::load_config(file);
  return 0;
}
