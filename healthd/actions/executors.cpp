// The executors: for each kind of journal entry (vocabulary/action.hpp, kEntryKinds), the function
// (actions/executor.hpp) that carries it out, each in a file of its own (actions/*_executor.cpp), and the policy rule that decides it from each sweep where one does so
// on its own (policy/sweep_rule.hpp). One explicit list, like the checks' (checks/registry.cpp).
// Adding an entry kind: ARCHITECTURE.md, "Add an action".
#include <algorithm>

#include "actions/slurm_actions.hpp"
#include "policy/notify_policy.hpp"

namespace ar::healthd {

// Each defined in its own file (carry_out_drain: actions/executor.hpp, as replace uses it too).
std::expected<Carried, std::string> carry_out_annotate(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_deep_check(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_hook(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_notify(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_replace(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_requeue(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_reset(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_resume(const ExecutorServices& services, const JournalEntry& e, WallTime now);
std::expected<Carried, std::string> carry_out_signal(const ExecutorServices& services, const JournalEntry& e, WallTime now);

const std::vector<SlurmActions::Executor>& SlurmActions::executors() {
  // The order within one pass: checkpoint signals first (the job checkpoints before anything else
  // happens to it), then drains (a requeue waits for its node's drain: in one pass the drain lands and
  // the requeue follows it at once), then the rest as they were journalled.
  static const std::vector<Executor> table = {
      {.kind = Action::signal, .order = 0, .function = &carry_out_signal},  // signal_executor.cpp
      {.kind = Action::drain, .order = 1, .function = &carry_out_drain},  // drain_executor.cpp
      {.kind = Action::requeue, .order = 2, .function = &carry_out_requeue},  // requeue_executor.cpp
      {.kind = Action::resume, .order = 2, .function = &carry_out_resume},  // resume_executor.cpp
      {.kind = Action::annotate, .order = 2, .function = &carry_out_annotate},  // annotate_executor.cpp
      {.kind = Action::hook, .order = 2, .function = &carry_out_hook},  // hook_executor.cpp
      {.kind = Action::reset_gpu, .order = 2, .function = &carry_out_reset},  // reset_executor.cpp
      {.kind = Action::replace, .order = 2, .function = &carry_out_replace},  // replace_executor.cpp
      {.kind = Action::deep_check, .order = 2, .function = &carry_out_deep_check},  // deep_check_executor.cpp
      {.kind = Action::notify_only, .order = 2, .function = &carry_out_notify, .needs_slurm = false,
       .sweep_rule = &policy::notify_rule},  // notify_executor.cpp, policy/notify_policy.cpp
  };
  return table;
}

const SlurmActions::Executor* SlurmActions::executor_for(Action kind) {
  const auto& table = executors();
  auto it = std::find_if(table.begin(), table.end(), [&](const Executor& x) { return x.kind == kind; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace ar::healthd
