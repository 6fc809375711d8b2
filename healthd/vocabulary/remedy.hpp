// What a fault calls for: a check's result, an XID rule, a kernel-log rule, an admin's `*_action`
// key. Ordered by severity (compare with severity(), not the values), so that the worst of several
// findings wins. What healthd then carries out is another word (vocabulary/action.hpp `Action`): a
// remedy that takes the node out becomes a drain entry, a reboot one a drain that reboots, and the
// cure chain names its own steps.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace ar::healthd {

enum class Remedy : std::uint8_t {
  none,         // not judged ("ignore" in an XID rule)
  warn,         // tell, keep the node
  notify_only,  // keep the node, and tell the admins: an incident notice once per episode
  restart_app,  // the application's fault (an XID): it restarts, the node stays in (a warning here)
  reset_gpu,    // a GPU reset cures it: the node is drained, the GPU reset once idle (policy/cure_plan)
  drain,        // take the node out of service, requeue its auto-resume jobs
  reboot,       // only a reboot cures it: drain, and Slurm reboots the node once idle
};

// Each remedy's name in config keys, results and state files: the one list to_string and
// parse_remedy read. The names are the same words as the actions that carry them out.
inline constexpr std::pair<Remedy, std::string_view> kRemedyNames[] = {
    {Remedy::none, "none"},           {Remedy::warn, "warn"},           {Remedy::notify_only, "notify_only"},
    {Remedy::restart_app, "restart_app"}, {Remedy::reset_gpu, "reset_gpu"}, {Remedy::drain, "drain"},
    {Remedy::reboot, "reboot"},
};

std::string to_string(Remedy r);
std::optional<Remedy> parse_remedy(const std::string& s);
// "none, warn, drain, reboot": the names of `set`, for messages.
std::string remedy_names(std::span<const Remedy> set);

// The remedies most config keys accept, and those an XID rule may name.
inline constexpr Remedy kNodeRemedies[] = {Remedy::none, Remedy::warn, Remedy::notify_only, Remedy::drain, Remedy::reboot};
inline constexpr Remedy kXidRemedies[] = {Remedy::none,      Remedy::warn,  Remedy::notify_only, Remedy::restart_app,
                                          Remedy::reset_gpu, Remedy::drain, Remedy::reboot};

// How severe a remedy is: which of two findings is the worse.
constexpr int severity(Remedy r) { return static_cast<int>(r); }

// Whether a finding calling for `r` keeps the node in service and is only told (a check's status warn).
constexpr bool keeps_node_in(Remedy r) {
  return r == Remedy::warn || r == Remedy::notify_only || r == Remedy::restart_app;
}

// Whether `r` takes the node out of service (a GPU reset needs it idle: it is drained first).
constexpr bool takes_node_out(Remedy r) { return r == Remedy::reset_gpu || r == Remedy::drain || r == Remedy::reboot; }

}  // namespace ar::healthd
