// Kernel-log records (healthd/checks/kernel_log_check: KernelLogMatcher with the built-in rules;
// xid_check: parse_xid_record), each input line as the reader hands it over: its record when the line
// carries a priority, and its text as a kernel record of every level too, so the rules' patterns and
// the XID parser see any bytes whatever the prefix. Properties: never a crash, and what a match keeps
// of the line can be written into a reply or a state file (nlohmann's dump() throws on invalid UTF-8,
// which ended the daemon: issue 10, item 2).
#include "checks/kernel_log/kernel_log_check.hpp"
#include "checks/gpu/xid_check.hpp"
#include "collectors/kernel_log_reader.hpp"
#include "fuzz_support.hpp"

namespace {

void judge(const ar::healthd::KernelLogMatcher& matcher, const ar::healthd::KernelRecord& record) {
  using namespace ar::healthd;
  if (auto fault = matcher.match(record))
    (void)nlohmann::json({{"code", fault->code}, {"message", fault->message}}).dump();
  if (auto xid = parse_xid_record(record))
    (void)nlohmann::json({{"xid", xid->xid}, {"gpu", xid->gpu}, {"text", xid->text}}).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  static const KernelLogMatcher matcher(default_kernel_log_rules());
  for (const auto& line : ar::fuzz::split_lines(ar::fuzz::as_text(data, size))) {
    if (auto record = parse_log_line(line)) judge(matcher, *record);
    KernelRecord raw;
    raw.facility = kFacilityKernel;
    raw.text = line;  // unsanitized: the matcher must cope with any bytes
    for (int level : {kLevelEmerg, kLevelWarning, kLevelInfo}) {
      raw.level = level;
      judge(matcher, raw);
    }
    if (auto xid = parse_xid_line(line)) (void)nlohmann::json({{"xid", xid->xid}, {"text", xid->text}}).dump();
  }
  return 0;
}
