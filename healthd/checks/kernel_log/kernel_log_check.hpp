// Hardware faults announced in the kernel log, matched by pattern rules (data, not code): machine
// checks, Neuron hardware errors, EFA and filesystem I/O errors, plus the admin's own rules; GPU XIDs
// go to the XID check through a tap.
//
// Only the kernel's own records count (facility 0: user space's writes to /dev/kmsg are LOG_USER), at
// each rule's level or more severe, with the rule's pattern matching where the message starts: any
// user can put text into the kernel log (the kernel's report of a crashed program names its file, at
// KERN_INFO), and such text must never drain a node (collectors/kernel_log_reader.hpp).
//
// A matched line is an event. The check stays faulty for `hold` after the last matching line and then
// passes again, so a stale line can never keep a node out forever; repeated faults are the
// responder's business (flap detection). A burst of the same code within the hold counts once.
//
// Patterns are RE2 (linear-time matching, no recursion: no line or pattern can stall or overflow
// the matcher; backreferences and lookarounds are refused when the config is loaded). The log is
// read and matched on the check's own watcher thread, never on the event loop that answers clients.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "checks/kernel_log/kernel_log_config.hpp"
#include "collectors/kernel_log_reader.hpp"

namespace re2 {
class RE2;
}

namespace ar::healthd {

// Why `pattern` is not a rule pattern (RE2's own words), or nullopt when it compiles; the config
// loader and the matcher compile with the same options.
std::optional<std::string> kernel_log_pattern_error(const std::string& pattern);

// The built-in rules, in match order (first match wins).
std::vector<KernelLogRule> default_kernel_log_rules();

// [checks.kernel_log]: its section and factory, for the registry.
CheckKind kernel_log_check_kind();

// One matched fault as the check keeps it.
struct KernelLogFault {
  std::string code;
  std::string message;
  Remedy action = Remedy::drain;
  std::chrono::steady_clock::time_point first_seen;
  std::chrono::steady_clock::time_point last_seen;
  std::uint64_t lines = 0;
  bool judged = false;  // reported by a sweep at least once: only then may its hold run out
};

class KernelLogMatcher {
 public:
  explicit KernelLogMatcher(const std::vector<KernelLogRule>& rules);
  ~KernelLogMatcher();
  KernelLogMatcher(KernelLogMatcher&&) noexcept;
  KernelLogMatcher& operator=(KernelLogMatcher&&) noexcept;

  // The fault a record reports, if any: code (with $1 replaced by the first capture), message, action.
  // Only a record of the kernel's own (facility 0) at a rule's max_level or more severe can match it.
  // Any bytes: code and message come out sanitized and short (they end up in the Slurm reason).
  std::optional<KernelLogFault> match(const KernelRecord& record) const;

 private:
  struct Compiled {
    KernelLogRule rule;
    std::unique_ptr<re2::RE2> re;
  };
  std::vector<Compiled> rules_;
};

class KernelLogCheck : public Check {
 public:
  using Clock = std::chrono::steady_clock;
  // A consumer of some records ahead of the rules (GPU XIDs go to the XID check, which owns their
  // policy). Only the kernel's own records (facility 0) reach it.
  using LineVerdict = ar::healthd::LineVerdict;
  using LineHook = KernelLineTap;

  // `state_file` keeps the active faults across restarts: the lines that announced them are behind
  // the reader's start position after a restart, and a fault must not be forgotten with them.
  KernelLogCheck(const KernelLogConfig& config, const std::filesystem::path& host_root,
                 std::filesystem::path state_file = {});
  ~KernelLogCheck() override;

  std::string name() const override { return "kernel_log"; }
  std::vector<CheckResult> run() override;

  // Set before the first poll (and before start()): one hook (tests), or the taps other checks'
  // factories added (checks/check_kind.hpp), read from then on and never changed.
  void set_line_hook(LineHook hook) { taps_ = std::make_shared<const KernelLineTaps>(KernelLineTaps{std::move(hook)}); }
  void set_line_taps(std::shared_ptr<const KernelLineTaps> taps) { taps_ = std::move(taps); }

  // Reads new records and records faults; true when a new fault code appeared (so the caller judges the
  // node now rather than at the next sweep). Bounded work: called every poll interval.
  bool poll();

  // Polls every poll interval on a thread of its own; `judge_now` is called on that thread when
  // poll() says so (the daemon posts it to the event loop). stop() joins it; the destructor stops it too.
  void start(JudgeNow judge_now) override;
  void stop() override;
  // The old check's read position (when it read the same log) and its active faults.
  void carry_over(Check& previous) override;
  bool clear(const std::string& code) override;

 private:
  CheckResult judge(Clock::time_point now);
  void save_locked() const;
  void load();

  void watch(std::stop_token stop, const JudgeNow& judge_now);

  std::mutex mutex_;  // poll() on the watcher thread and from run() on the engine's check thread
  KernelLogConfig config_;
  KernelLogReader reader_;
  KernelLogMatcher matcher_;
  std::string reader_error_;
  std::uint64_t records_read_ = 0;
  std::uint64_t not_kernel_ = 0;  // records of another facility than the kernel's: ignored
  std::map<std::string, KernelLogFault> active_;
  std::filesystem::path state_file_;
  std::shared_ptr<const KernelLineTaps> taps_;
  std::jthread watcher_;  // last: stopped before the members it uses go
};

}  // namespace ar::healthd
