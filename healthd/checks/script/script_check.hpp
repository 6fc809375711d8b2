// An admin's own check program, run without a shell with a deadline and bounded output (like NHC
// checks, but one broken script marks only its own check as broken). Exit status: 0 ok, 1 warn,
// 2 fault (the configured action, drain by default); anything else, a signal or the deadline: the
// script is broken, which says nothing about the node. The first line of output is the message.
#pragma once

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "checks/script/script_config.hpp"
#include "runtime/process.hpp"

namespace ar::healthd {

// The verdict on one finished run (pure: tested with made-up results).
CheckResult judge_script(const ScriptConfig& config, const std::expected<ProcessResult, std::string>& run);

class ScriptCheck : public Check {
 public:
  explicit ScriptCheck(ScriptConfig config) : config_(std::move(config)) {}

  std::string name() const override { return "script:" + config_.name; }
  std::vector<CheckResult> run() override;
  // The process runner kills the script at its timeout; the engine's deadline is a little later.
  CheckSchedule schedule() const override { return {config_.interval, config_.timeout + std::chrono::seconds(2)}; }

 private:
  ScriptConfig config_;
};

// [[checks.script]]: one check per admin script: its section and factory, for the registry.
CheckKind script_check_kind();

}  // namespace ar::healthd
