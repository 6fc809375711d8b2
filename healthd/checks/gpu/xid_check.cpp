#include "xid_check.hpp"

#include "collectors/gpu_snapshot.hpp"

#include <charconv>
#include <fstream>

#include <re2/re2.h>
#include <spdlog/spdlog.h>

#include "state/atomic_file.hpp"
#include "text/text.hpp"
#include "state/json_fields.hpp"

namespace ar::healthd {
namespace {

// NVML and the kernel log report the same XID a moment apart; closer than this it is one event.
constexpr auto kSameEvent = std::chrono::seconds(5);
// An event's text is shown in status and may reach a drain reason: one short line.
constexpr std::size_t kMaxText = 160;

std::string read_boot_id(const std::filesystem::path& file) {
  if (file.empty()) return {};
  std::ifstream in(file);
  std::string id;
  std::getline(in, id);
  return id;
}

// A reboot resets every GPU: what a reboot or a reset cures is gone after one.
bool cured_by_reboot(Remedy a) { return a == Remedy::reboot || a == Remedy::reset_gpu; }

}  // namespace

std::optional<XidEvent> parse_xid_line(const std::string& message) {
  // "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus." (with MIG:
  // "(PCI:0000:3b:00 GPU-I:05): 94, ..."). Every kernel record passes here: the regex only runs on
  // messages that can be XIDs. Anchored: the kernel's report of a crashed program holds the file's
  // name further in, and any user can name a file "NVRM: Xid (PCI:0000:17:00): 79, ...".
  if (!message.starts_with("NVRM: Xid (PCI:")) return std::nullopt;
  // RE2: linear in the message, whatever its length (std::regex recursed per character).
  static const re2::RE2 re(R"(NVRM: Xid \(PCI:([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})[^)]*\): ([0-9]+)\b)");
  re2::StringPiece m[3];
  if (!re.Match(message, 0, message.size(), RE2::ANCHOR_START, m, 3)) return std::nullopt;
  XidEvent e;
  const char* end = m[2].data() + m[2].size();
  if (auto [ptr, ec] = std::from_chars(m[2].data(), end, e.xid); ec != std::errc() || ptr != end) return std::nullopt;
  e.gpu.assign(m[1].data(), m[1].size());
  for (auto& c : e.gpu) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  e.source = "kernel_log";
  e.text = sanitize(message, kMaxText);
  e.at = XidCheck::Clock::now();
  return e;
}

std::optional<XidEvent> parse_xid_record(const KernelRecord& record) {
  if (!record.from_kernel() || record.level > kXidMaxLevel) return std::nullopt;
  return parse_xid_line(record.text);
}

XidCheck::XidCheck(XidPolicy policy, std::chrono::seconds hold, std::filesystem::path state_file,
                   std::filesystem::path boot_id_file)
    : policy_(std::move(policy)),
      hold_(hold),
      state_file_(std::move(state_file)),
      boot_id_file_(std::move(boot_id_file)),
      boot_id_(read_boot_id(boot_id_file_)) {
  load();
}

void XidCheck::set_gpu_labels(std::map<std::string, std::string> labels) {
  std::lock_guard lock(mutex_);
  labels_ = std::move(labels);
}

bool XidCheck::record(const XidEvent& e) {
  const auto& rule = policy_.rule_for(e.xid);
  if (rule.action == Remedy::none) return false;
  std::lock_guard lock(mutex_);
  const bool first_of_its_kind = !tracked_.contains({e.xid, e.gpu});
  auto& t = tracked_[{e.xid, e.gpu}];
  if (t.total > 0 && t.last_source != e.source && e.at - t.last_seen < kSameEvent) {
    t.last_seen = std::max(t.last_seen, e.at);  // the other source's report of the same event
    return false;
  }
  t.xid = e.xid;
  t.gpu = e.gpu;
  t.action = rule.action;
  t.text = sanitize(e.text, kMaxText);  // whichever source: it is shown in status and reasons
  t.last_source = e.source;
  t.last_seen = e.at;
  ++t.total;
  t.events.push_back(e.at);
  if (rule.window.count() > 0)
    while (!t.events.empty() && e.at - t.events.front() > rule.window) t.events.pop_front();
  bool became_active = false;
  if (!t.active && t.events.size() >= rule.count) {
    t.active = true;
    t.judged = false;
    // Something to carry out now: a fault, or a notice to the admins (notify_only).
    became_active = status_for(t.action) == Status::fault || t.action == Remedy::notify_only;
    spdlog::warn("gpu_xid: XID {} on {} ({}): {}", e.xid, e.gpu.empty() ? "an unknown GPU" : e.gpu, e.source,
                 to_string(t.action));
  }
  // A new XID or a fault that now holds is written at once: a restart must not forget it. A repeat
  // only moves counts and times, and an XID storm (an application's XID 13 per line) would otherwise
  // write and fsync the file once per kernel-log line, on the event loop that answers the plugin; the
  // next sweep writes it.
  if (first_of_its_kind || became_active) save_locked();
  else unsaved_ = true;
  return became_active;
}

std::string XidCheck::describe(const Tracked& t) const {
  const auto& rule = policy_.rule_for(t.xid);
  std::string gpu = t.gpu.empty() ? "a GPU" : t.gpu;
  if (auto it = labels_.find(t.gpu); it != labels_.end()) gpu = it->second;
  std::string s = "XID " + std::to_string(t.xid) + " on " + gpu + ": " + rule.description;
  if (!t.active)
    s += " (" + std::to_string(t.events.size()) + " of " + std::to_string(rule.count) + " within " +
         std::to_string(rule.window.count()) + " s)";
  return s;
}

std::vector<CheckResult> XidCheck::run() { return {judge(Clock::now())}; }

CheckResult XidCheck::judge(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  CheckResult r;
  r.check = name();
  r.at = now;
  bool changed = std::exchange(unsaved_, false);
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    auto& t = it->second;
    const auto& rule = policy_.rule_for(t.xid);
    if (rule.window.count() > 0)
      while (!t.events.empty() && now - t.events.front() > rule.window) t.events.pop_front();
    bool expired = now - t.last_seen > hold_ && (t.judged || !t.active);
    if (expired) {
      it = tracked_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  const Tracked* worst = nullptr;
  auto rank = [](const Tracked& t) {
    return t.active ? 10 + severity(node_action_of(t.action)) : severity(Remedy::warn);
  };
  nlohmann::json events = nlohmann::json::array();
  for (auto& [key, t] : tracked_) {
    if (t.active && !t.judged) {
      t.judged = true;
      changed = true;
    }
    events.push_back({{"xid", t.xid}, {"gpu", t.gpu}, {"action", to_string(t.action)}, {"active", t.active},
                      {"count", t.total}, {"source", t.last_source}, {"last_ms", to_epoch_ms(t.last_seen)},
                      {"text", t.text}});
    r.xids.push_back({t.xid, t.gpu, t.total, t.last_seen});
    if (worst == nullptr || rank(t) > rank(*worst)) worst = &t;
    r.also_held.push_back("GPU-XID-" + std::to_string(t.xid));  // clear forgets every XID of a code
  }
  if (changed) save_locked();
  r.detail = {{"events", events}};
  if (worst == nullptr) {
    r.message = "no XID in the last " + std::to_string(hold_.count()) + " s";
    return r;
  }
  r.code = "GPU-XID-" + std::to_string(worst->xid);
  r.xid = worst->xid;
  r.message = describe(*worst);
  if (worst->active) {
    r.status = status_for(worst->action);
    r.action = node_action_of(worst->action);
    r.detail["recommended"] = to_string(worst->action);
    if (!worst->gpu.empty()) r.gpus = {worst->gpu};  // what a GPU reset would reset
  } else {
    r.status = Status::warn;
    r.action = Remedy::warn;
  }
  return r;
}

void XidCheck::save_locked() const {
  if (state_file_.empty()) return;
  nlohmann::json tracked = nlohmann::json::array();
  for (const auto& [key, t] : tracked_) {
    nlohmann::json times = nlohmann::json::array();
    for (auto at : t.events) times.push_back(to_epoch_ms(at));
    tracked.push_back({{"xid", t.xid}, {"gpu", t.gpu}, {"action", to_string(t.action)}, {"events_ms", times},
                       {"total", t.total}, {"last_ms", to_epoch_ms(t.last_seen)}, {"source", t.last_source},
                       {"text", t.text}, {"active", t.active}, {"judged", t.judged}});
  }
  nlohmann::json j = {{"version", 1}, {"boot_id", boot_id_}, {"tracked", tracked}};
  // Texts are sanitized where they enter; `replace` makes sure a stray byte can never throw here.
  const auto serialized = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (auto r = write_file_atomically(state_file_, serialized); !r) spdlog::error("gpu_xid: {}", r.error());
}

void XidCheck::load() {
  if (state_file_.empty()) return;
  auto read = read_json_file(state_file_);
  if (!read) {
    spdlog::error("gpu_xid: {}; starting without remembered XIDs", read.error());
    return;
  }
  if (read->is_null()) return;
  try {
    const auto& j = *read;
    const bool rebooted = !boot_id_.empty() && j.value("boot_id", std::string()) != boot_id_;
    for (const auto& tj : j.at("tracked")) {
      Tracked t;
      t.xid = json_fields::integer<unsigned>(tj, "xid");
      t.gpu = tj.at("gpu").get<std::string>();
      t.action = parse_remedy(tj.at("action").get<std::string>()).value_or(Remedy::drain);
      for (const auto& ms : json_fields::array(tj, "events_ms")) t.events.push_back(json_fields::time_value(ms, "events_ms"));
      t.total = json_fields::integer<std::uint64_t>(tj, "total");
      t.last_seen = json_fields::time_ms(tj, "last_ms");
      t.last_source = tj.at("source").get<std::string>();
      t.text = sanitize(tj.at("text").get<std::string>(), kMaxText);  // written by an older version?
      t.active = tj.at("active").get<bool>();
      t.judged = tj.at("judged").get<bool>();
      if (rebooted && cured_by_reboot(t.action)) {
        spdlog::info("gpu_xid: the node rebooted since XID {} on {}: that fault is cured", t.xid, t.gpu);
        continue;
      }
      tracked_[{t.xid, t.gpu}] = t;
    }
  } catch (const std::exception& e) {
    tracked_.clear();  // refused as a whole, not half believed
    spdlog::error("gpu_xid: {}: unreadable, starting without remembered XIDs: {}", state_file_.string(), e.what());
  }
  std::lock_guard lock(mutex_);
  save_locked();  // records the current boot id
}

LineVerdict XidCheck::take_kernel_log_record(const KernelRecord& kernel_record) {
  auto e = parse_xid_record(kernel_record);
  if (!e) return LineVerdict::not_mine;
  return record(*e) ? LineVerdict::new_fault : LineVerdict::taken;
}

void XidCheck::start(JudgeNow judge_now) {
  if (nvml_library_.empty() || nvml_events_) return;
  {
    std::lock_guard lock(relay_->mutex);
    relay_->check = this;
  }
  // An XID as it happens makes the node be judged now. The watcher thread only records and asks.
  nvml_events_ = std::make_unique<NvmlEventWatcher>(nvml_library_, [relay = relay_, judge_now](const NvmlEvent& ev) {
    XidEvent e{ev.xid, ev.bus_id.empty() ? std::string() : short_pci_address(ev.bus_id), "nvml",
               ev.double_bit_ecc ? "NVML event: double-bit ECC error" : "NVML event: XID " + std::to_string(ev.xid),
               Clock::now()};
    std::lock_guard lock(relay->mutex);
    if (relay->check != nullptr && relay->check->record(e) && judge_now) judge_now("NVML XID event");
  });
  nvml_events_->start();
}

void XidCheck::stop() {
  // A watcher stuck inside NVML (a GPU that is gone can hang a call) cannot be joined: it is left
  // behind, not freed, since its thread still uses it; the relay keeps it from this check.
  if (nvml_events_ && !nvml_events_->stop()) (void)nvml_events_.release();
}

XidCheck::~XidCheck() {
  {
    std::lock_guard lock(relay_->mutex);
    relay_->check = nullptr;
  }
  stop();
}

bool XidCheck::clear(const std::string& code) {
  std::lock_guard lock(mutex_);
  const auto n = std::erase_if(tracked_, [&](const auto& entry) { return "GPU-XID-" + std::to_string(entry.second.xid) == code; });
  if (n > 0) save_locked();
  return n > 0;
}

void XidCheck::carry_over(Check& previous) {
  auto* old = dynamic_cast<XidCheck*>(&previous);
  if (old == nullptr || old == this) return;
  std::scoped_lock lock(mutex_, old->mutex_);
  if (old->boot_id_ != boot_id_) return;  // a reboot between the two: what the old one saw is cured
  tracked_ = old->tracked_;
  unsaved_ = true;
}

}  // namespace ar::healthd
