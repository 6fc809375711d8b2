// Hardware faults announced in the kernel log, matched by pattern rules (data, not code): GPU XIDs,
// machine checks, Neuron hardware errors, filesystem I/O errors, plus the admin's own rules.
//
// A matched line is an event. The check stays faulty for `hold` after the last matching line and then
// passes again, so a stale line can never keep a node out forever; repeated faults are the
// responder's business (flap detection). A burst of the same code within the hold counts once.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <vector>

#include "check.hpp"
#include "collectors/kernel_log_reader.hpp"
#include "config/config.hpp"

namespace ar::healthd {

// The built-in rules, in match order (first match wins).
std::vector<KernelLogRule> default_kernel_log_rules();

// One matched fault as the check keeps it.
struct KernelLogFault {
  std::string code;
  std::string message;
  Action action = Action::drain;
  std::chrono::steady_clock::time_point first_seen;
  std::chrono::steady_clock::time_point last_seen;
  std::uint64_t lines = 0;
  bool judged = false;  // reported by a sweep at least once: only then may its hold run out
};

class KernelLogMatcher {
 public:
  explicit KernelLogMatcher(const std::vector<KernelLogRule>& rules);
  // The fault a line reports, if any: code (with $1 replaced by the first capture), message, action.
  std::optional<KernelLogFault> match(const std::string& line) const;

 private:
  struct Compiled {
    KernelLogRule rule;
    std::regex re;
  };
  std::vector<Compiled> rules_;
};

class KernelLogCheck : public Check {
 public:
  using Clock = std::chrono::steady_clock;
  // A consumer of some lines ahead of the rules (GPU XIDs go to the XID check, which owns their policy).
  enum class LineVerdict { not_mine, taken, new_fault };
  using LineHook = std::function<LineVerdict(const std::string& line)>;

  // `state_file` keeps the active faults across restarts: the lines that announced them are behind
  // the reader's start position after a restart, and a fault must not be forgotten with them.
  KernelLogCheck(const KernelLogConfig& config, const std::filesystem::path& host_root,
                 std::filesystem::path state_file = {});

  std::string name() const override { return "kernel_log"; }
  std::vector<CheckResult> run() override;

  // Set before the first poll.
  void set_line_hook(LineHook hook) { hook_ = std::move(hook); }

  // Reads new lines and records faults; true when a new fault code appeared (so the caller judges the
  // node now rather than at the next sweep). Cheap: called every poll interval.
  bool poll();

 private:
  CheckResult judge(Clock::time_point now);
  void save_locked() const;
  void load();

  std::mutex mutex_;  // run() on the check thread, poll() on the event loop
  KernelLogConfig config_;
  KernelLogReader reader_;
  KernelLogMatcher matcher_;
  std::string reader_error_;
  std::map<std::string, KernelLogFault> active_;
  std::filesystem::path state_file_;
  LineHook hook_;
};

}  // namespace ar::healthd
