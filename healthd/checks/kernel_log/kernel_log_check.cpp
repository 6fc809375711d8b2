#include "kernel_log_check.hpp"

#include <condition_variable>

#include <re2/re2.h>
#include <spdlog/spdlog.h>

#include "collectors/host_path.hpp"
#include "state/atomic_file.hpp"
#include "text/text.hpp"
#include "state/json_fields.hpp"

namespace ar::healthd {
namespace {

// What a matched line may put into a Slurm reason: one short line.
constexpr std::size_t kMaxRuleMessage = 160;
constexpr std::size_t kMaxCapture = 64;

std::unique_ptr<re2::RE2> compile(const std::string& pattern) {
  RE2::Options options;
  options.set_log_errors(false);  // an error is reported once, by the config loader, with its position
  return std::make_unique<re2::RE2>(pattern, options);
}

}  // namespace

std::optional<std::string> kernel_log_pattern_error(const std::string& pattern) {
  auto re = compile(pattern);
  if (re->ok()) return std::nullopt;
  return re->error();
}

std::vector<KernelLogRule> default_kernel_log_rules() {
  // GPU XID lines are not here: the XID check takes them (through a kernel-log tap, checks/check_kind.hpp)
  // and judges them by its policy table, together with the XIDs NVML reports.
  //
  // Each rule is anchored at the start of the message, where the driver's own prefix is, and takes
  // records at the level the driver writes them or more severe (read from each driver's source; see
  // docs/checks.md). Where a driver writes at crit, alert or emerg, err is allowed too: a kernel that
  // moves such a message to err still reports the fault, and no user-space text reaches the kernel
  // log at err or above through the kernel's own reports (segfault and trap reports are info).
  return {
      // arch/x86/kernel/cpu/mce/core.c: the records of an error (__print_mce, mce_panic) are
      // pr_emerg(HW_ERR ...) under pr_fmt "mce: ". "Machine check events logged" is pr_info, written
      // for corrected errors too: not a fault here.
      {"KMSG-MCE", R"(mce: \[Hardware Error\])", Remedy::drain, "", true, kLevelErr},
      // The Neuron runtime reports a hardware error through the driver's printk ioctl
      // (aws-neuron-driver ncdev_printk: printk(KERN_ERR "%s\n", ...)), the message being the
      // runtime's text, which may lead with an ISO-8601 time.
      {"NEURON-HW-ERR", R"((?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(?:Z|[+-][0-9:]+)? )?NEURON_HW_ERR=)", Remedy::drain, "",
       true, kLevelErr},
      // The EFA driver (drivers/infiniband/hw/efa) when its device stops answering: admin commands
      // timing out, or the device reporting a fatal error. Transient queue messages are not matched.
      // dev_err() writes "efa 0000:10:1c.0: ...", ibdev_err() "efa 0000:10:1c.0 efa_0: ...", both KERN_ERR.
      {"EFA-DRIVER-ERR",
       R"(efa [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7](?: [^ :]+)?: .*(Admin command (timed out|failed)|[Dd]evice (is in an error state|reset)|[Ff]atal error))",
       Remedy::drain, "", true, kLevelErr},
      // fs/ext4/super.c __ext4_error and friends: printk(KERN_CRIT "EXT4-fs error (device ...".
      {"FS-IO-ERR", R"(EXT4-fs error)", Remedy::drain, "", true, kLevelErr},
      // fs/xfs: xfs_alert (KERN_ALERT) "XFS (dev): metadata I/O error in ..." and "Corruption ...".
      {"FS-IO-ERR", R"(XFS \([^)]*\): (metadata I/O error|Corruption))", Remedy::drain, "", true, kLevelErr},
      // fs/buffer.c buffer_io_error: KERN_ERR; kernels that name the disk (dev_err) lead with "block sda: ".
      {"FS-IO-ERR", R"((?:block [^ :]+: )?Buffer I/O error on dev)", Remedy::drain, "", true, kLevelErr},
      // libcfs: CERROR is KERN_ERR and CEMERG KERN_EMERG, both with the prefix "LustreError: ".
      {"FS-IO-ERR", R"(LustreError: .*rc = -(5|110)\b)", Remedy::drain, "", true, kLevelErr},
  };
}

KernelLogMatcher::KernelLogMatcher(const std::vector<KernelLogRule>& rules) {
  for (const auto& r : rules) {
    auto re = compile(r.pattern);
    // The config loader refused bad patterns already; a built-in one that fails is a bug, said once.
    if (!re->ok()) {
      spdlog::error("kernel_log: rule {}: pattern not used: {}", r.code, re->error());
      continue;
    }
    rules_.push_back({r, std::move(re)});
  }
}

KernelLogMatcher::~KernelLogMatcher() = default;
KernelLogMatcher::KernelLogMatcher(KernelLogMatcher&&) noexcept = default;
KernelLogMatcher& KernelLogMatcher::operator=(KernelLogMatcher&&) noexcept = default;

std::optional<KernelLogFault> KernelLogMatcher::match(const KernelRecord& record) const {
  // Only the kernel's own records: what user space writes to /dev/kmsg has a facility of 1 or more.
  if (!record.from_kernel()) return std::nullopt;
  const auto& line = record.text;
  for (const auto& c : rules_) {
    if (record.level > c.rule.max_level) continue;
    re2::StringPiece groups[2];
    const int wanted = std::min(1 + c.re->NumberOfCapturingGroups(), 2);
    const auto anchor = c.rule.anchored ? RE2::ANCHOR_START : RE2::UNANCHORED;
    if (!c.re->Match(line, 0, line.size(), anchor, groups, wanted)) continue;
    KernelLogFault f;
    f.code = c.rule.code;
    if (auto pos = f.code.find("$1"); pos != std::string::npos) {
      const auto& g = groups[1];
      f.code.replace(pos, 2, wanted > 1 && !g.empty() ? sanitize({g.data(), g.size()}, kMaxCapture) : "");
    }
    f.message = sanitize(c.rule.message.empty() ? line : c.rule.message, kMaxRuleMessage);
    f.action = c.rule.action;
    return f;
  }
  return std::nullopt;
}

namespace {
std::vector<KernelLogRule> all_rules(const KernelLogConfig& config) {
  auto rules = config.rules;
  if (config.default_rules) {
    auto d = default_kernel_log_rules();
    rules.insert(rules.end(), d.begin(), d.end());
  }
  return rules;
}
}  // namespace

KernelLogCheck::KernelLogCheck(const KernelLogConfig& config, const std::filesystem::path& host_root,
                               std::filesystem::path state_file)
    : config_(config),
      reader_(under_root(host_root, config.path)),
      matcher_(all_rules(config)),
      state_file_(std::move(state_file)) {
  if (auto r = reader_.open(); !r) reader_error_ = r.error();
  load();
}

KernelLogCheck::~KernelLogCheck() { stop(); }

void KernelLogCheck::start(JudgeNow judge_now) {
  stop();
  watcher_ = std::jthread([this, cb = std::move(judge_now)](std::stop_token stop) { watch(stop, cb); });
}

void KernelLogCheck::stop() {
  if (!watcher_.joinable()) return;
  watcher_.request_stop();
  watcher_.join();
}

void KernelLogCheck::watch(std::stop_token stop, const JudgeNow& judge_now) {
  std::mutex m;
  std::condition_variable_any wake;  // woken only by stop(): the wait is the poll interval
  std::unique_lock lock(m);
  while (!stop.stop_requested()) {
    // Nothing may end this thread but stop(): a failed poll is logged and the next one tried.
    try {
      // A new fault line: the node is judged now, not at the next sweep, so a job hung on a dead
      // GPU is requeued without waiting for it to exit.
      if (poll() && judge_now) judge_now("kernel log event");
    } catch (const std::exception& e) {
      spdlog::error("kernel_log: poll: {}", e.what());
    }
    wake.wait_for(lock, stop, config_.poll_interval, [] { return false; });
  }
}

namespace {
// Steady-clock times do not survive a restart; the state file holds wall-clock ages.
std::int64_t age_ms(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

void KernelLogCheck::save_locked() const {
  if (state_file_.empty()) return;
  nlohmann::json faults = nlohmann::json::array();
  auto now_ms = to_epoch_ms(std::chrono::system_clock::now());
  for (const auto& [code, f] : active_)
    faults.push_back({{"code", code}, {"message", f.message}, {"action", to_string(f.action)}, {"lines", f.lines},
                      {"first_seen_ms", now_ms - age_ms(f.first_seen)}, {"last_seen_ms", now_ms - age_ms(f.last_seen)}});
  const nlohmann::json j = {{"version", 1}, {"active", faults}};
  // Texts are sanitized where they enter; `replace` makes sure a stray byte can never throw here.
  if (auto r = write_file_atomically(state_file_, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)); !r)
    spdlog::error("kernel_log: {}", r.error());
}

void KernelLogCheck::load() {
  if (state_file_.empty()) return;
  auto read = read_json_file(state_file_);
  if (!read) {
    spdlog::error("kernel_log: {}; starting without remembered faults", read.error());
    return;
  }
  const auto& j = *read;
  if (j.is_null()) return;
  try {
    auto now_ms = to_epoch_ms(std::chrono::system_clock::now());
    for (const auto& fj : j.at("active")) {
      KernelLogFault f;
      f.code = fj.at("code").get<std::string>();
      f.message = sanitize(fj.at("message").get<std::string>(), kMaxRuleMessage);  // written by an older version?
      f.action = parse_remedy(fj.at("action").get<std::string>()).value_or(Remedy::drain);
      f.lines = json_fields::integer<std::uint64_t>(fj, "lines");
      f.first_seen = Clock::now() - std::chrono::milliseconds(now_ms - to_epoch_ms(json_fields::time_ms(fj, "first_seen_ms")));
      f.last_seen = Clock::now() - std::chrono::milliseconds(now_ms - to_epoch_ms(json_fields::time_ms(fj, "last_seen_ms")));
      active_[f.code] = f;
    }
  } catch (const std::exception& e) {
    active_.clear();  // refused as a whole, not half believed
    spdlog::error("kernel_log: {}: unreadable, starting without remembered faults: {}", state_file_.string(), e.what());
  }
}

bool KernelLogCheck::poll() {
  std::lock_guard lock(mutex_);
  auto records = reader_.read_new();
  if (!records) {
    reader_error_ = records.error();
    return false;
  }
  reader_error_.clear();
  bool new_fault = false;
  auto now = Clock::now();
  for (const auto& record : *records) {
    ++records_read_;
    // User space's records (a write to /dev/kmsg is LOG_USER at least) never count, for any rule or tap.
    if (!record.from_kernel()) {
      if (not_kernel_++ == 0)
        spdlog::info("kernel_log: {}: records not from the kernel are ignored (the first: facility {}): only the "
                     "kernel's own (facility 0) can report a hardware fault",
                     reader_.path().string(), record.facility);
      continue;
    }
    // Another check's record (an XID) is theirs alone: not matched against the rules as well.
    auto verdict = LineVerdict::not_mine;
    if (taps_)
      for (auto tap = taps_->begin(); verdict == LineVerdict::not_mine && tap != taps_->end(); ++tap) verdict = (*tap)(record);
    if (verdict == LineVerdict::new_fault) new_fault = true;
    if (verdict != LineVerdict::not_mine) continue;
    auto f = matcher_.match(record);
    if (!f) continue;
    auto it = active_.find(f->code);
    if (it == active_.end() || now - it->second.last_seen > config_.hold) {
      f->first_seen = now;
      f->last_seen = now;
      f->lines = 1;
      active_[f->code] = *f;
      new_fault = true;
      save_locked();
    } else {
      it->second.last_seen = now;  // the same fault again within its hold: one event, longer hold
      ++it->second.lines;
    }
  }
  return new_fault;
}

void KernelLogCheck::carry_over(Check& previous) {
  auto* old = dynamic_cast<KernelLogCheck*>(&previous);
  if (old == nullptr || old == this) return;
  std::scoped_lock lock(mutex_, old->mutex_);
  if (old->reader_.path() == reader_.path()) {
    reader_.swap(old->reader_);
    records_read_ = old->records_read_;
    not_kernel_ = old->not_kernel_;
  }
  active_ = old->active_;  // newer than the state file this check loaded: repeats are not saved
  save_locked();
}

std::vector<CheckResult> KernelLogCheck::run() {
  poll();
  std::lock_guard lock(mutex_);
  return {judge(Clock::now())};
}

CheckResult KernelLogCheck::judge(Clock::time_point now) {
  CheckResult r;
  r.check = name();
  r.at = std::chrono::system_clock::now();
  // A fault is never dropped before a sweep has reported it, however late that sweep comes.
  auto before = active_.size();
  for (auto it = active_.begin(); it != active_.end();)
    it = (it->second.judged && now - it->second.last_seen > config_.hold) ? active_.erase(it) : std::next(it);
  if (active_.size() != before) save_locked();
  for (auto& [code, f] : active_) f.judged = true;

  const KernelLogFault* worst = nullptr;
  nlohmann::json faults = nlohmann::json::array();
  for (const auto& [code, f] : active_) {
    faults.push_back({{"code", code}, {"message", f.message}, {"action", to_string(f.action)}, {"lines", f.lines}});
    r.also_held.push_back(code);
    if (worst == nullptr || severity(f.action) > severity(worst->action)) worst = &f;
  }
  // What was read, so that one can tell the log is read and why a line did not count.
  nlohmann::json records = {{"read", records_read_}, {"not_kernel", not_kernel_}, {"without_priority", reader_.without_priority()}};
  if (reader_.last_seq() != 0) records["last_seq"] = reader_.last_seq();
  r.detail = {{"path", reader_.path().string()}, {"active", faults}, {"records", records}};
  if (worst != nullptr && status_for(worst->action) != Status::ok) {
    r.status = status_for(worst->action);
  } else if (!reader_error_.empty()) {
    r.status = Status::error;
    r.message = reader_error_;
    return r;
  }
  if (worst != nullptr) {
    r.code = worst->code;
    r.message = worst->message;
    r.action = worst->action;
  }
  return r;
}

bool KernelLogCheck::clear(const std::string& code) {
  std::lock_guard lock(mutex_);
  if (active_.erase(code) == 0) return false;
  save_locked();
  return true;
}

CheckKind kernel_log_check_kind() {
  return check_kind<KernelLogConfig>(kernel_log_section(), [](const KernelLogConfig& c, BuildContext& context) {
    std::vector<std::shared_ptr<Check>> checks;
    if (!c.enabled) return checks;
    auto check = std::make_shared<KernelLogCheck>(c, context.host_root, context.state_dir / "kernel_log.json");
    check->set_line_taps(context.kernel_line_taps);
    checks.push_back(std::move(check));
    return checks;
  });
}

}  // namespace ar::healthd
