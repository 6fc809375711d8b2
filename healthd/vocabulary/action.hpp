// What healthd carries out: the kinds of journal entry (actions/executors.cpp carries out each), the
// steps of a cure chain, and the actions an admin's hook may follow. What a fault calls for is another
// word (vocabulary/remedy.hpp `Remedy`); the names are shared, so `drain` in a config key and in the
// journal reads the same. A config key names the subset it accepts (config/fields.hpp `read_action`).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace ar::healthd {

enum class Action : std::uint8_t {
  none,         // nothing (a cure chain at its end, a hook entry that follows no action)
  drain,        // take the node out of service (Slurm's drain, healthd's reason)
  reboot,       // a drain that reboots: Slurm reboots the node once idle (a cure step; a hook may follow it)
  requeue,      // an auto-resume job, after its node is out of service
  resume,       // healthd's own drain, after the node recovered
  annotate,     // a job's admin comment: why its attempt ended
  signal,       // a job's steps and batch script: checkpoint now (a fault announced ahead)
  hook,         // an admin's program ([[policy.hook]]), when a named action was carried out
  notify_only,  // an incident notice (webhook, event log), once per episode (actions/notify_executor.cpp)
  // Cure steps (policy/cure_plan.hpp) besides reboot, and what checks a node before it returns.
  reset_gpu,    // reset the node's faulty GPUs once it is idle
  replace,      // new hardware is the cure: drained for good, reason "(replacement requested)", the replace hooks
  deep_check,   // the admin's long test ([cure] deep_check) before a node healthd drained returns
};

// Each action's name, in config keys and the journal: the one list to_string and parse_action read.
inline constexpr std::pair<Action, std::string_view> kActionNames[] = {
    {Action::none, "none"},         {Action::drain, "drain"},         {Action::reboot, "reboot"},
    {Action::requeue, "requeue"},   {Action::resume, "resume"},       {Action::annotate, "annotate"},
    {Action::signal, "signal"},     {Action::hook, "hook"},           {Action::notify_only, "notify_only"},
    {Action::reset_gpu, "reset_gpu"}, {Action::replace, "replace"}, {Action::deep_check, "deep_check"},
};

std::string to_string(Action a);
std::optional<Action> parse_action(const std::string& s);

// The kinds of journal entry: what healthd carries out, each by its executor (actions/executors.cpp).
inline constexpr Action kEntryKinds[] = {Action::drain,     Action::requeue, Action::resume,
                                         Action::annotate,  Action::signal,  Action::hook,
                                         Action::reset_gpu, Action::replace, Action::deep_check,
                                         Action::notify_only};

// The actions an admin's hook ([[policy.hook]] `on`) may follow: those healthd carries out on Slurm
// (a new kind of entry that acts on Slurm or tells someone is listed here too).
inline constexpr Action kHookable[] = {Action::drain,  Action::reboot,    Action::requeue, Action::resume,
                                       Action::signal, Action::reset_gpu, Action::replace, Action::notify_only};

// The steps a cure chain may hold ([[cure.chain]] steps), in the order they usually escalate.
inline constexpr Action kCureSteps[] = {Action::reset_gpu, Action::reboot, Action::replace};

// "drain, reboot, requeue": the names of `set`, for messages.
std::string action_names(std::span<const Action> set);

}  // namespace ar::healthd
