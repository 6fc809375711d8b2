#include "kernel_log_check.hpp"


#include <spdlog/spdlog.h>

#include "state/atomic_file.hpp"
#include "state/json_fields.hpp"

namespace ar::healthd {

std::vector<KernelLogRule> default_kernel_log_rules() {
  // GPU XID lines are not here: the XID check takes them (see set_line_hook) and judges them by its
  // policy table, together with the XIDs NVML reports.
  return {
      {"KMSG-MCE", R"(mce: \[Hardware Error\])", Action::drain, ""},
      {"NEURON-HW-ERR", R"(NEURON_HW_ERR=)", Action::drain, ""},
      // The EFA driver (drivers/infiniband/hw/efa) when its device stops answering: admin commands
      // timing out, or the device reporting a fatal error. Transient queue messages are not matched.
      {"EFA-DRIVER-ERR", R"(\befa [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9]: .*(Admin command (timed out|failed)|[Dd]evice (is in an error state|reset)|[Ff]atal error))",
       Action::drain, ""},
      {"FS-IO-ERR", R"((EXT4-fs error|XFS \([^)]*\): (metadata I/O error|Corruption)|Buffer I/O error on dev|LustreError: .*rc = -(5|110)\b))",
       Action::drain, ""},
  };
}

KernelLogMatcher::KernelLogMatcher(const std::vector<KernelLogRule>& rules) {
  for (const auto& r : rules) rules_.push_back({r, std::regex(r.pattern, std::regex::ECMAScript | std::regex::optimize)});
}

std::optional<KernelLogFault> KernelLogMatcher::match(const std::string& line) const {
  for (const auto& c : rules_) {
    std::smatch m;
    if (!std::regex_search(line, m, c.re)) continue;
    KernelLogFault f;
    f.code = c.rule.code;
    if (auto pos = f.code.find("$1"); pos != std::string::npos) f.code.replace(pos, 2, m.size() > 1 ? m[1].str() : "");
    f.message = c.rule.message.empty() ? line : c.rule.message;
    // Trim to one short line: it ends up in the Slurm reason.
    for (auto& ch : f.message)
      if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
    if (f.message.size() > 160) f.message = f.message.substr(0, 157) + "...";
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
  if (auto r = write_file_atomically(state_file_, nlohmann::json{{"version", 1}, {"active", faults}}.dump()); !r)
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
      f.message = fj.at("message").get<std::string>();
      f.action = parse_action(fj.at("action").get<std::string>()).value_or(Action::drain);
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
  auto lines = reader_.read_new();
  if (!lines) {
    reader_error_ = lines.error();
    return false;
  }
  reader_error_.clear();
  bool new_fault = false;
  auto now = Clock::now();
  for (const auto& line : *lines) {
    if (hook_) {
      auto v = hook_(line);
      if (v == LineVerdict::new_fault) new_fault = true;
      if (v != LineVerdict::not_mine) continue;
    }
    auto f = matcher_.match(line);
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
    if (worst == nullptr || f.action > worst->action) worst = &f;
  }
  r.detail = {{"path", reader_.path().string()}, {"active", faults}};
  if (worst != nullptr && worst->action >= Action::drain) {
    r.status = Status::fault;
  } else if (worst != nullptr && worst->action == Action::warn) {
    r.status = Status::warn;
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

}  // namespace ar::healthd
