// The one vocabulary of actions. What a fault calls for (a check's result, an XID rule, a kernel-log
// rule, an admin's `*_action` key) is one of the first seven, in rising order of severity; the
// journal's entries (what healthd carries out on Slurm, actions/) use the same names. A config key
// names the subset it accepts (config/fields.hpp `read_action`).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace ar::healthd {

enum class Action : std::uint8_t {
  // What a fault calls for, in rising order of severity (compare with severity(), not the values).
  none,         // not judged ("ignore" in an XID rule)
  warn,         // tell, keep the node
  notify_only,  // keep the node, and tell the admins: an incident notice (webhook, event log) once per
                // episode, carried out as a journal entry (actions/notify_executor.cpp)
  restart_app,  // the application's fault (an XID): it restarts, the node stays in (a warning here)
  reset_gpu,    // a GPU reset cures it: the node is drained, the GPU reset once idle (a cure step, policy/cure_plan)
  drain,        // take the node out of service, requeue its auto-resume jobs
  reboot,       // only a reboot cures it: drain, and Slurm reboots the node once idle
  // What healthd carries out besides (journal entries; never a fault's action).
  requeue,      // an auto-resume job, after its node is out of service
  resume,       // healthd's own drain, after the node recovered
  annotate,     // a job's admin comment: why its attempt ended
  signal,       // a job's steps and batch script: checkpoint now (a fault announced ahead)
  hook,         // an admin's program ([[policy.hook]]), when a named action was carried out
  // Cure steps (policy/cure_plan.hpp) besides reset_gpu and reboot, and what checks a node before it returns.
  replace,      // new hardware is the cure: drained for good, reason "(replacement requested)", the replace hooks
  deep_check,   // the admin's long test ([cure] deep_check) before a node healthd drained returns
};

// Each action's name, in config keys and the journal: the one list to_string and parse_action read.
inline constexpr std::pair<Action, std::string_view> kActionNames[] = {
    {Action::none, "none"},           {Action::warn, "warn"},       {Action::notify_only, "notify_only"},
    {Action::restart_app, "restart_app"}, {Action::reset_gpu, "reset_gpu"}, {Action::drain, "drain"},
    {Action::reboot, "reboot"},       {Action::requeue, "requeue"}, {Action::resume, "resume"},
    {Action::annotate, "annotate"},   {Action::signal, "signal"},   {Action::hook, "hook"},
    {Action::replace, "replace"},     {Action::deep_check, "deep_check"},
};

std::string to_string(Action a);
std::optional<Action> parse_action(const std::string& s);

// The actions a fault may call for in most config keys, and in an XID rule.
inline constexpr Action kNodeActions[] = {Action::none, Action::warn, Action::notify_only, Action::drain, Action::reboot};
inline constexpr Action kXidActions[] = {Action::none,      Action::warn,  Action::notify_only, Action::restart_app,
                                         Action::reset_gpu, Action::drain, Action::reboot};

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

// How severe what a fault calls for is: which of two faults is the worse. 0 for none and for the
// journal's own verbs (never a fault's action).
constexpr int severity(Action a) {
  switch (a) {
    case Action::warn: return 1;
    case Action::notify_only: return 2;
    case Action::restart_app: return 3;
    case Action::reset_gpu: return 4;
    case Action::drain: return 5;
    case Action::reboot: return 6;
    default: return 0;
  }
}

// Whether a fault calling for `a` keeps the node in service and is only told (a check's status warn).
constexpr bool keeps_node_in(Action a) {
  return a == Action::warn || a == Action::notify_only || a == Action::restart_app;
}

// Whether `a` takes the node out of service (a GPU reset needs it idle: it is drained first).
constexpr bool takes_node_out(Action a) {
  return a == Action::reset_gpu || a == Action::drain || a == Action::reboot;
}

// "none, warn, drain, reboot": the names of `set`, for messages.
std::string action_names(std::span<const Action> set);

}  // namespace ar::healthd
