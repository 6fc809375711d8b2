// Kernel-log lines (healthd/checks/kernel_log_check: KernelLogMatcher with the built-in rules;
// xid_check: parse_xid_line), each input line as the reader hands it over. Properties: never a crash,
// and what a match keeps of the line can be written into a reply or a state file (nlohmann's dump()
// throws on invalid UTF-8, which ended the daemon: issue 10, item 2).
#include "checks/kernel_log/kernel_log_check.hpp"
#include "checks/gpu/xid_check.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  static const KernelLogMatcher matcher(default_kernel_log_rules());
  for (const auto& line : ar::fuzz::split_lines(ar::fuzz::as_text(data, size))) {
    if (auto fault = matcher.match(line))
      (void)nlohmann::json({{"code", fault->code}, {"message", fault->message}}).dump();
    if (auto xid = parse_xid_line(line))
      (void)nlohmann::json({{"xid", xid->xid}, {"gpu", xid->gpu}, {"text", xid->text}}).dump();
  }
  return 0;
}
