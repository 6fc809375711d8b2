#include "script_check.hpp"

#include <cctype>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

constexpr std::size_t kMaxOutput = 4096;  // a message, not a log: the rest is dropped unread
constexpr std::size_t kMaxScriptMessage = 200;

// Any bytes the script printed: the first line, valid and without control characters (it goes
// into the status, the log and a Slurm reason).
std::string first_line(const std::string& text) {
  return sanitize(std::string_view(text).substr(0, text.find('\n')), kMaxScriptMessage);
}

std::string code_of(const std::string& name) {
  std::string code = "SCRIPT-";
  for (char c : name) code += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '-';
  return code;
}

}  // namespace

CheckResult judge_script(const ScriptConfig& config, const std::expected<ProcessResult, std::string>& run) {
  CheckResult r;
  r.check = "script:" + config.name;
  r.at = std::chrono::system_clock::now();
  const std::string who = "script " + config.name;
  r.detail = {{"command", config.command}};
  auto broken = [&](const std::string& why) {
    r.status = Status::error;
    r.code = "CHECK-BROKEN";
    r.message = who + ": broken: " + why;
    return r;
  };
  if (!run) return broken(run.error());
  if (run->timed_out) return broken("killed after its timeout of " + std::to_string(config.timeout.count()) + " s");
  if (run->signaled) return broken("killed by a signal");
  r.detail["exit_code"] = run->exit_code;
  std::string said = first_line(run->out.empty() ? run->err : run->out);
  switch (run->exit_code) {
    case 0: r.message = said; return r;
    case 1:
      r.status = Status::warn;
      r.action = Remedy::warn;
      break;
    case 2:
      r.action = config.action;
      r.status = status_for(config.action);
      break;
    default:
      return broken("exit " + std::to_string(run->exit_code) + (said.empty() ? "" : ": " + said));
  }
  r.code = code_of(config.name);
  r.message = who + ": " + (said.empty() ? "exit " + std::to_string(run->exit_code) : said);
  return r;
}

std::vector<CheckResult> ScriptCheck::run() {
  return {judge_script(config_, run_process(config_.command, config_.timeout, kMaxOutput))};
}

CheckKind script_check_kind() {
  return check_kind<ScriptsConfig>(script_section(), [](const ScriptsConfig& c, BuildContext&) {
    std::vector<std::shared_ptr<Check>> checks;
    for (const auto& script : c.scripts) checks.push_back(std::make_shared<ScriptCheck>(script));
    return checks;
  });
}

}  // namespace ar::healthd
