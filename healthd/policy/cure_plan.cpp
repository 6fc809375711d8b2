#include "cure_plan.hpp"

#include <algorithm>
#include <charconv>

namespace ar::healthd::policy {
namespace {

using enum Action;

// Codes whose cure the catalogue names, whatever action their check was set to (an admin may lower
// memory_action to drain; the cure of a pending remap is still a reset).
bool reset_cures(const std::string& code) {
  static const char* const codes[] = {"GPU-ROW-REMAP-PENDING", "GPU-PAGE-RETIREMENT-PENDING", "GPU-RECOVERY-RESET",
                                      "GPU-RECOVERY-DRAIN-AND-RESET"};
  return std::find(std::begin(codes), std::end(codes), code) != std::end(codes);
}

}  // namespace

std::optional<unsigned> xid_of_code(const std::string& code) {
  constexpr std::string_view prefix = "GPU-XID-";
  if (!code.starts_with(prefix) || code.size() == prefix.size()) return std::nullopt;
  unsigned xid = 0;
  const char* first = code.data() + prefix.size();
  const char* last = code.data() + code.size();
  if (auto [ptr, ec] = std::from_chars(first, last, xid); ec != std::errc() || ptr != last) return std::nullopt;
  return xid;
}

std::vector<Action> default_cure_chain(const std::string& code, Remedy remedy) {
  if (code == "GPU-ROW-REMAP-FAILED") return {replace};
  // The Neuron check drains for an error no reset or reboot repairs, and reboots for the others.
  if (code == "NEURON-HW-ERR" && remedy == Remedy::drain) return {replace};
  if (reset_cures(code) || remedy == Remedy::reset_gpu) return {reset_gpu, reboot, replace};
  if (remedy == Remedy::reboot) return {reboot, replace};
  return {};
}

std::vector<Action> cure_chain(const CureConfig& config, const CheckResult& fault, bool held) {
  for (const auto& c : config.chains)
    if (!c.code.empty() && c.code == fault.code) return c.steps;
  if (fault.xid)
    for (const auto& c : config.chains)
      if (c.xid && *c.xid == *fault.xid) return c.steps;
  // A node that keeps failing is not cured by one more reset or reboot.
  if (held) return {replace};
  return default_cure_chain(fault.code, fault.action);
}

}  // namespace ar::healthd::policy
