#include "efa_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checks/result_util.hpp"

namespace ar::healthd {

std::uint64_t CounterWindow::observe(const std::string& key, std::uint64_t value, Clock::time_point now) {
  auto& s = samples_[key];
  if (!s.empty() && value < s.back().second) s.clear();  // reset: start over from here
  s.emplace_back(now, value);
  // Keep the newest sample at or before the window's start as the baseline; drop older ones.
  while (s.size() > 1 && s[1].first <= now - window_) s.pop_front();
  return s.back().second - s.front().second;
}

void CounterWindow::keep_only(const std::set<std::string>& keys) {
  for (auto it = samples_.begin(); it != samples_.end();) it = keys.contains(it->first) ? std::next(it) : samples_.erase(it);
}

namespace {

CheckResult judge_count(const EfaSnapshot& snap, std::uint32_t expected) {
  const auto found = static_cast<std::uint32_t>(snap.devices.size());
  nlohmann::json names = nlohmann::json::array();
  for (const auto& d : snap.devices) names.push_back(d.name);
  CheckResult r;
  if (expected == 0 && found == 0 && snap.ignored.empty()) {
    r = not_applicable_result("efa.count", "not applicable: no EFA device, none expected");
  } else if (found < expected) {
    r = make_finding("efa.count", "EFA-COUNT", Remedy::drain,
                     std::to_string(found) + " of " + std::to_string(expected) + " EFA devices present");
  } else if (expected > 0 && found > expected) {
    r = make_finding("efa.count", "EFA-COUNT", Remedy::warn,
                     std::to_string(found) + " EFA devices, " + std::to_string(expected) + " expected (profile?)");
  } else {
    r = make_result("efa.count", Status::ok, std::to_string(found) + " EFA devices");
  }
  nlohmann::json newer = nlohmann::json::array();
  for (const auto& d : snap.devices)
    if (!d.known_id) newer.push_back(d.name + " (" + d.device_id + ")");
  // Told, not judged: a newer EFA generation is counted; another Amazon RDMA function is not EFA.
  if (!newer.empty()) r.message += "; counted as EFA, a device id newer than this healthd knows: " + newer.front().get<std::string>() + and_more(newer.size());
  if (!snap.ignored.empty()) r.message += "; not EFA (PCI device id): " + snap.ignored.front() + and_more(snap.ignored.size());
  r.detail = {{"expected", expected}, {"found", found}, {"devices", names}, {"newer_device_ids", newer}, {"ignored", snap.ignored}};
  return r;
}

CheckResult judge_ports(const EfaSnapshot& snap) {
  if (snap.devices.empty()) return not_applicable_result("efa.ports", "not applicable: no EFA device");
  nlohmann::json ports = nlohmann::json::array();
  std::vector<std::string> down, unreadable;
  std::vector<EfaPortReading> readings;  // the ports whose state could be read
  std::size_t active = 0;
  for (const auto& d : snap.devices) {
    if (!d.error.empty()) unreadable.push_back(d.error);
    for (const auto& p : d.ports) {
      ports.push_back({{"device", d.name}, {"port", p.port}, {"state", p.state}, {"error", p.error}});
      if (!p.error.empty()) {
        unreadable.push_back(p.error);
        continue;
      }
      readings.push_back(EfaPortReading{d.name, p.port, p.state == "ACTIVE"});
      if (p.state != "ACTIVE") down.push_back(d.name + " port " + p.port + " is " + p.state);
      else ++active;
    }
  }
  CheckResult r;
  if (!down.empty())
    r = make_finding("efa.ports", "EFA-PORT-DOWN", Remedy::drain, down.front() + and_more(down.size()));
  else if (!unreadable.empty())  // the check could not look: says nothing about the node
    r = make_result("efa.ports", Status::error, "cannot read port state: " + unreadable.front() + and_more(unreadable.size()));
  else
    r = make_result("efa.ports", Status::ok, std::to_string(active) + " EFA ports ACTIVE");
  r.detail = {{"ports", ports}};
  r.devices.efa_ports = std::move(readings);
  return r;
}

// The network counters efa r2.17 added ("Add Network HW statistics counters", RELEASENOTES.md).
bool network_counter(const std::string& name) {
  return name == "retrans_bytes" || name == "retrans_pkts" || name == "retrans_timeout_events" ||
         name == "unresponsive_remote_events" || name == "impaired_remote_conn_events";
}

// Configured counters that no EFA device has at either level: "retrans_timeout_events (efa r2.17 and later)".
std::vector<std::string> not_available(const EfaSnapshot& snap, const EfaConfig& config) {
  std::vector<std::string> out;
  for (const auto& [name, _] : config.counter_thresholds) {
    bool found = false;
    for (const auto& d : snap.devices) {
      found = found || d.counters.contains(name);
      for (const auto& p : d.ports) found = found || p.counters.contains(name);
    }
    if (!found) out.push_back(network_counter(name) ? name + " (efa r2.17 and later)" : name);
  }
  return out;
}

CheckResult judge_counters(const EfaSnapshot& snap, const EfaConfig& config, const std::vector<EfaCounterRise>& rises) {
  if (snap.devices.empty()) return not_applicable_result("efa.counters", "not applicable: no EFA device");
  nlohmann::json over = nlohmann::json::array();
  nlohmann::json seen = nlohmann::json::array();
  const EfaCounterRise* first = nullptr;
  std::size_t n_over = 0;
  for (const auto& c : rises) {
    seen.push_back({{"device", c.device}, {"port", c.port}, {"counter", c.counter}, {"value", c.value}, {"rise", c.rise}});
    auto t = config.counter_thresholds.find(c.counter);
    if (t == config.counter_thresholds.end() || c.rise <= t->second) continue;
    over.push_back(seen.back());
    if (first == nullptr) first = &c;
    ++n_over;
  }
  const auto window_s = std::to_string(config.counter_window.count());
  const auto missing = not_available(snap, config);
  CheckResult r;
  if (first != nullptr && config.counter_action != Remedy::none) {
    const auto where = first->port.empty() ? first->device : first->device + " port " + first->port;
    r = make_finding("efa.counters", "EFA-COUNTER-" + first->counter, config.counter_action,
                     where + ": " + first->counter + " rose by " + std::to_string(first->rise) + " within " + window_s +
                         " s (threshold " + std::to_string(config.counter_thresholds.at(first->counter)) + ")" + and_more(n_over));
  } else {
    r = make_result("efa.counters", Status::ok,
                    std::to_string(rises.size()) + " error counters within their thresholds over " + window_s + " s");
  }
  if (!missing.empty() && r.code.empty()) {  // told beside a pass; a finding's message (a drain reason) stays about the finding
    r.message += fmt::format("; not available on this driver ({}): {}",
                             snap.driver ? "efa " + snap.driver->text : std::string("efa version unknown"), fmt::join(missing, ", "));
  }
  r.detail = {{"window_s", config.counter_window.count()}, {"over", over}, {"counters", seen}, {"not_available", missing},
              {"driver_version", snap.driver ? nlohmann::json(snap.driver->text) : nlohmann::json(nullptr)}};
  return r;
}

}  // namespace

std::vector<CheckResult> judge_efa(const EfaSnapshot& snap, std::uint32_t expected, const EfaConfig& config,
                                   const std::vector<EfaCounterRise>& rises) {
  return {judge_count(snap, expected), judge_ports(snap), judge_counters(snap, config, rises)};
}

EfaCheck::EfaCheck(const EfaConfig& config, const std::filesystem::path& host_root)
    : config_(config), host_root_(host_root), window_(config.counter_window) {
  for (const auto& [name, _] : config.counter_thresholds) counters_.push_back(name);
}

std::vector<CheckResult> EfaCheck::run_at(CounterWindow::Clock::time_point now) {
  auto snap = read_efa_sysfs(host_root_, counters_);
  std::vector<EfaCounterRise> rises;
  std::set<std::string> keys;
  for (const auto& d : snap.devices) {
    for (const auto& [counter, value] : d.counters) {
      auto key = d.name + "//" + counter;  // no port: the device level
      keys.insert(key);
      rises.push_back({d.name, "", counter, value, window_.observe(key, value, now)});
    }
    for (const auto& p : d.ports)
      for (const auto& [counter, value] : p.counters) {
        auto key = d.name + "/" + p.port + "/" + counter;
        keys.insert(key);
        rises.push_back({d.name, p.port, counter, value, window_.observe(key, value, now)});
      }
  }
  window_.keep_only(keys);
  return judge_efa(snap, config_.expected_devices.value_or(0), config_, rises);
}

CheckKind efa_check_kind() {
  return single_check_kind<EfaConfig>(efa_section(), [](const EfaConfig& c, BuildContext& context) -> std::shared_ptr<Check> {
    if (!c.enabled) return nullptr;
    return std::make_shared<EfaCheck>(c, context.host_root);
  });
}

}  // namespace ar::healthd
