#include "neuron_check.hpp"

#include <algorithm>

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collectors/neuron_layout.hpp"
#include "checks/result_util.hpp"

namespace ar::healthd {

namespace {

CheckResult judge_count(const NeuronSnapshot& snap, std::uint32_t expected) {
  const auto in_sysfs = static_cast<std::uint32_t>(snap.devices.size());
  const auto what = std::to_string(in_sysfs) + (expected ? " of " + std::to_string(expected) : std::string()) +
                    " Neuron devices in sysfs, " + std::to_string(snap.dev_nodes) + " /dev/neuron* nodes";
  CheckResult r;
  if (expected == 0 && in_sysfs == 0 && snap.dev_nodes == 0)
    r = not_applicable_result("neuron.count", "not applicable: no Neuron device, none expected");
  else if (in_sysfs < expected || snap.dev_nodes < expected)
    r = make_finding("neuron.count", "NEURON-COUNT", Remedy::drain, what);
  else if (expected > 0 && (in_sysfs > expected || snap.dev_nodes > expected))
    r = make_finding("neuron.count", "NEURON-COUNT", Remedy::warn, what + " (profile?)");
  else
    r = make_result("neuron.count", Status::ok, what);
  r.detail = {{"expected", expected}, {"sysfs", in_sysfs}, {"dev_nodes", snap.dev_nodes}, {"driver_loaded", snap.sysfs_present}};
  return r;
}

std::string driver_name(const NeuronSnapshot& snap) {
  return snap.driver ? "Neuron driver " + snap.driver->text : "Neuron driver version unknown (no " + std::string(kNeuronVersionFile) + ")";
}

std::string_view kind_name(const NeuronCounterSpec* spec) {
  if (spec == nullptr) return "unknown";
  switch (spec->kind) {
    case NeuronCounterKind::uncorrectable: return "uncorrectable";
    case NeuronCounterKind::repairable: return "repairable";
    case NeuronCounterKind::correctable: return "correctable";
  }
  return "unknown";
}

// Inferentia (v1) devices have no ECC counters in sysfs (nsysfsmetric_add_ecc_nodes_v1 adds none).
bool exports_no_ecc(const NeuronDevice& d) { return d.device_name == "Inferentia"; }

// Why a device shows no uncorrectable counter, naming the driver version found.
std::string blind_message(const NeuronSnapshot& snap, const std::string& device) {
  const auto layout = neuron_layout_for(snap.driver);
  if (layout == NeuronLayout::before_ecc)
    return device + ": " + driver_name(snap) +
           " predates the ECC counters in sysfs (added in 2.14): uncorrectable errors cannot be seen; upgrade aws-neuronx-dkms";
  std::string m = device + ": no uncorrectable ECC counter (mem_ecc_uncorrected, sram_ecc_uncorrected) under "
                           "/sys/devices/virtual/neuron_device/" + device + "; " + driver_name(snap);
  if (snap.driver) m += " (" + std::string(describe(layout)) + ")";
  return m + ": a sysfs layout this healthd does not know";
}

// Counters the documentation has but no device here shows, once: "mem_ecc_corrected (2.30.2 and later)".
std::vector<std::string> not_available(const NeuronSnapshot& snap) {
  std::set<std::string> seen;
  for (const auto& d : snap.devices)
    for (const auto& c : d.counters) seen.insert(c.name);
  std::vector<std::string> out;
  for (const auto& spec : neuron_counter_specs())
    if (!seen.contains(std::string(spec.name)))
      out.push_back(std::string(spec.name) + " (" + release_name(spec.since) + " and later)");
  return out;
}

std::string joined(const std::vector<std::string>& items) { return fmt::format("{}", fmt::join(items, ", ")); }

namespace {

// The error counters of every device, sorted by what they mean against the config's limits.
struct ErrorTally {
  nlohmann::json counters = nlohmann::json::array();  // every counter read, for the detail
  std::vector<const NeuronErrorCounter*> unrepairable, repairable, corrected_over;
  std::vector<std::string> errors, blind, without_ecc;
  std::uint64_t corrected_total = 0;
  std::vector<NeuronReading> readings;  // each device with counters: healthy unless one is unrepairable or repairable
};

ErrorTally tally_errors(const NeuronSnapshot& snap, const NeuronConfig& config) {
  ErrorTally t;
  for (const auto& d : snap.devices) {
    t.errors.insert(t.errors.end(), d.errors.begin(), d.errors.end());
    bool has_uncorrectable = false, past_limit = false;
    for (const auto& c : d.counters) {
      const auto* spec = find_neuron_counter(c.name);
      t.counters.push_back({{"scope", c.scope}, {"counter", c.name}, {"path", c.path}, {"value", c.value}, {"kind", kind_name(spec)}});
      if (spec == nullptr) continue;  // not documented: data, never judged
      switch (spec->kind) {
        case NeuronCounterKind::uncorrectable:
          has_uncorrectable = true;
          if (c.value > config.max_uncorrected) {
            t.unrepairable.push_back(&c);
            past_limit = true;
          }
          break;
        case NeuronCounterKind::repairable:
          if (c.value > config.max_uncorrected) {
            t.repairable.push_back(&c);
            past_limit = true;
          }
          break;
        case NeuronCounterKind::correctable:
          t.corrected_total += c.value;
          if (config.max_corrected && c.value > *config.max_corrected) t.corrected_over.push_back(&c);
          break;
      }
    }
    if (!d.counters.empty()) t.readings.push_back({d.name, !past_limit});
    if (has_uncorrectable) continue;
    (exports_no_ecc(d) ? t.without_ecc : t.blind).push_back(d.name);
  }
  return t;
}

std::string counter_message(const NeuronErrorCounter& c, std::size_t n) {
  const auto* spec = find_neuron_counter(c.name);
  std::string m = c.scope + ": " + c.name + " = " + std::to_string(c.value) + " (" + std::string(spec->meaning) + ")";
  // Where it was read, when that is not where drivers up to 2.30 put it.
  if (!c.path.ends_with("stats/hardware/" + c.name)) m += " at " + c.path;
  return m + and_more(n);
}

// The worst of what the tally holds: an unrepairable error, a repairable one, a counter that could not
// be read, a device with no counters, corrected errors past the limit; else healthy.
CheckResult errors_verdict(const ErrorTally& t, const NeuronSnapshot& snap, const NeuronConfig& config,
                           const std::vector<std::string>& missing) {
  if (!t.unrepairable.empty())
    return make_finding("neuron.errors", "NEURON-HW-ERR", Remedy::drain,
                        counter_message(*t.unrepairable.front(), t.unrepairable.size() + t.repairable.size()));
  if (!t.repairable.empty())
    return make_finding("neuron.errors", "NEURON-HW-ERR", Remedy::reboot, counter_message(*t.repairable.front(), t.repairable.size()));
  if (!t.errors.empty())
    return make_result("neuron.errors", Status::error, "cannot read: " + t.errors.front() + and_more(t.errors.size()));
  if (!t.blind.empty())
    return make_result("neuron.errors", Status::error, blind_message(snap, t.blind.front()) + and_more(t.blind.size()));
  if (!t.corrected_over.empty() && config.corrected_action != Remedy::none)
    return make_finding("neuron.errors", "NEURON-ECC-CORRECTED", config.corrected_action,
                        counter_message(*t.corrected_over.front(), t.corrected_over.size()) + " (limit " +
                            std::to_string(*config.max_corrected) + ")");
  if (t.without_ecc.size() == snap.devices.size())
    return make_result("neuron.errors", Status::ok,
                       "not available: the Neuron driver exports no ECC counters for Inferentia (v1) devices (" +
                           std::to_string(t.without_ecc.size()) + " here)");
  std::string m = "no uncorrectable errors on " + std::to_string(snap.devices.size() - t.without_ecc.size()) + " Neuron devices";
  if (t.corrected_total > 0) m += "; " + std::to_string(t.corrected_total) + " corrected (data, not judged" +
                                  (config.max_corrected ? ", limit " + std::to_string(*config.max_corrected) : "") + ")";
  if (!missing.empty()) m += "; not available on this driver: " + joined(missing);
  return make_result("neuron.errors", Status::ok, m);
}

}  // namespace

CheckResult judge_errors(const NeuronSnapshot& snap, const NeuronConfig& config) {
  if (snap.devices.empty()) return not_applicable_result("neuron.errors", "not applicable: no Neuron device");
  const auto tally = tally_errors(snap, config);
  const auto missing = not_available(snap);
  CheckResult r = errors_verdict(tally, snap, config, missing);
  r.devices.neuron_devices = tally.readings;
  r.detail = {{"max_uncorrected", config.max_uncorrected},
              {"max_corrected", config.max_corrected ? nlohmann::json(*config.max_corrected) : nlohmann::json(nullptr)},
              {"driver_version", snap.driver ? nlohmann::json(snap.driver->text) : nlohmann::json(nullptr)},
              {"layout", describe(neuron_layout_for(snap.driver))},
              {"counters", tally.counters},
              {"not_available", missing}};
  return r;
}

bool documented_component(const std::string& word) {
  for (auto c : neuron_health_components())
    if (c == word) return true;
  return false;
}

// One device's health files as the result's detail shows them.
nlohmann::json health_row(const NeuronDevice& d, const std::vector<NeuronHeartbeatAge>& heartbeats) {
  const auto& h = d.health;
  nlohmann::json row = {{"device", d.name}, {"path", h.path}};
  if (h.unhealthy_components) row["unhealthy_components"] = *h.unhealthy_components;
  if (h.heartbeat) row["healthcheck_heartbeat"] = *h.heartbeat;
  for (const auto& a : heartbeats)
    if (a.device == d.name) row["heartbeat_unchanged_s"] = a.unchanged_for.count();
  if (!h.other.empty()) row["other"] = h.other;
  return row;
}

// The device as the metrics show it: healthy unless the driver lists a component other than "none",
// known to healthd or not.
NeuronReading health_reading(const NeuronDevice& d) {
  const auto& words = d.health.unhealthy_components;
  const bool listed = words && std::any_of(words->begin(), words->end(), [](const std::string& w) { return w != "none"; });
  return {d.name, !listed};
}

CheckResult judge_health(const NeuronSnapshot& snap, const NeuronConfig& config, const std::vector<NeuronHeartbeatAge>& heartbeats) {
  if (snap.devices.empty()) return not_applicable_result("neuron.health", "not applicable: no Neuron device");
  nlohmann::json devices = nlohmann::json::array();
  std::vector<NeuronReading> readings;
  std::vector<std::string> unhealthy, odd, stale;
  std::size_t with_status = 0, with_components = 0;
  for (const auto& d : snap.devices) {
    const auto& h = d.health;
    devices.push_back(health_row(d, heartbeats));
    readings.push_back(health_reading(d));
    if (h.path.empty()) continue;
    ++with_status;
    if (!h.unhealthy_components) continue;
    ++with_components;
    std::vector<std::string> bad, unknown;
    for (const auto& w : *h.unhealthy_components) {
      if (w == "none") continue;
      (documented_component(w) ? bad : unknown).push_back(w);
    }
    const auto where = " (" + h.path + "/unhealthy_components)";
    if (!bad.empty()) unhealthy.push_back(d.name + ": the Neuron driver reports " + joined(bad) + " unhealthy" + where);
    if (!unknown.empty())
      odd.push_back(d.name + ": unhealthy_components holds '" + joined(unknown) +
                    "', no subsystem this healthd knows: shown, not judged as a fault" + where);
  }
  if (config.heartbeat_stall.count() > 0)
    for (const auto& a : heartbeats)
      if (a.unchanged_for >= config.heartbeat_stall)
        stale.push_back(a.device + ": healthcheck_heartbeat has stayed " + std::to_string(a.value) + " for " +
                        std::to_string(a.unchanged_for.count()) + " s: the driver's health bitmap may be stale");
  CheckResult r;
  if (!unhealthy.empty() && config.unhealthy_action != Remedy::none) {
    r = make_finding("neuron.health", "NEURON-UNHEALTHY", config.unhealthy_action, unhealthy.front() + and_more(unhealthy.size()));
  } else if (!odd.empty()) {
    r = make_finding("neuron.health", "NEURON-UNHEALTHY", Remedy::warn, odd.front() + and_more(odd.size()));
  } else if (!stale.empty()) {
    r = make_finding("neuron.health", "NEURON-HEALTH-STALE", Remedy::warn, stale.front() + and_more(stale.size()));
  } else if (with_components > 0) {
    r = make_result("neuron.health", Status::ok,
                    "the Neuron driver reports " + std::to_string(with_components) + " devices healthy (health_status)");
  } else if (with_status > 0) {
    r = make_result("neuron.health", Status::ok,
                    "health_status on " + std::to_string(with_status) + " devices without unhealthy_components (" +
                        driver_name(snap) + "; the driver fills it on Trainium2 and later from " +
                        release_name(kNeuronUnhealthyComponentsSince) + ")");
  } else {
    r = make_result("neuron.health", Status::ok,
                    "not available on this driver: stats/hardware/health_status (" + release_name(kNeuronHealthStatusSince) +
                        " and later; " + driver_name(snap) + ")");
  }
  r.detail = {{"devices", devices}, {"heartbeat_stall_s", config.heartbeat_stall.count()}};
  r.devices.neuron_devices = std::move(readings);
  return r;
}

}  // namespace

std::vector<CheckResult> judge_neuron(const NeuronSnapshot& snap, std::uint32_t expected, const NeuronConfig& config,
                                      const std::vector<NeuronHeartbeatAge>& heartbeats) {
  return {judge_count(snap, expected), judge_errors(snap, config), judge_health(snap, config, heartbeats)};
}

std::vector<CheckResult> NeuronCheck::run_at(Clock::time_point now) {
  auto snap = read_neuron_sysfs(host_root_);
  std::vector<NeuronHeartbeatAge> ages;
  std::map<std::string, std::pair<std::uint64_t, Clock::time_point>> next;
  for (const auto& d : snap.devices) {
    if (!d.health.heartbeat) continue;
    auto it = heartbeat_since_.find(d.name);
    auto since = it != heartbeat_since_.end() && it->second.first == *d.health.heartbeat ? it->second.second : now;
    next[d.name] = {*d.health.heartbeat, since};
    ages.push_back({d.name, *d.health.heartbeat, std::chrono::duration_cast<std::chrono::seconds>(now - since)});
  }
  heartbeat_since_ = std::move(next);  // a device that went away (or lost its heartbeat) starts over
  return judge_neuron(snap, config_.expected_devices.value_or(0), config_, ages);
}

CheckKind neuron_check_kind() {
  return single_check_kind<NeuronConfig>(neuron_section(), [](const NeuronConfig& c, BuildContext& context) -> std::shared_ptr<Check> {
    if (!c.enabled) return nullptr;
    return std::make_shared<NeuronCheck>(c, context.host_root);
  });
}

}  // namespace ar::healthd
