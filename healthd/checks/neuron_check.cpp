#include "neuron_check.hpp"

#include "result_util.hpp"

namespace ar::healthd {

namespace {

CheckResult judge_count(const NeuronSnapshot& snap, std::uint32_t expected) {
  const auto in_sysfs = static_cast<std::uint32_t>(snap.devices.size());
  const auto what = std::to_string(in_sysfs) + (expected ? " of " + std::to_string(expected) : std::string()) +
                    " Neuron devices in sysfs, " + std::to_string(snap.dev_nodes) + " /dev/neuron* nodes";
  CheckResult r;
  if (expected == 0 && in_sysfs == 0 && snap.dev_nodes == 0)
    r = make_result("neuron.count", Status::ok, "not applicable: no Neuron device, none expected");
  else if (in_sysfs < expected || snap.dev_nodes < expected)
    r = make_finding("neuron.count", "NEURON-COUNT", Action::drain, what);
  else if (expected > 0 && (in_sysfs > expected || snap.dev_nodes > expected))
    r = make_finding("neuron.count", "NEURON-COUNT", Action::warn, what + " (profile?)");
  else
    r = make_result("neuron.count", Status::ok, what);
  r.detail = {{"expected", expected}, {"sysfs", in_sysfs}, {"dev_nodes", snap.dev_nodes}, {"driver_loaded", snap.sysfs_present}};
  return r;
}

std::string describe(const std::string& counter) {
  if (counter == "mem_ecc_uncorrected") return "uncorrectable HBM ECC errors";
  if (counter == "mem_ecc_repairable_uncorrected") return "repairable uncorrectable HBM ECC errors";
  if (counter == "sram_ecc_uncorrected") return "uncorrectable SRAM ECC errors";
  return "hardware errors";
}

CheckResult judge_errors(const NeuronSnapshot& snap, const NeuronConfig& config) {
  if (snap.devices.empty()) return make_result("neuron.errors", Status::ok, "not applicable: no Neuron device");
  nlohmann::json counters = nlohmann::json::array();
  std::vector<const NeuronErrorCounter*> unrepairable, repairable;
  std::vector<std::string> errors;
  std::vector<std::string> without_stats;
  for (const auto& d : snap.devices) {
    if (!d.has_hardware_stats) without_stats.push_back(d.name);
    errors.insert(errors.end(), d.errors.begin(), d.errors.end());
    for (const auto& c : d.counters) {
      counters.push_back({{"scope", c.scope}, {"counter", c.name}, {"value", c.value}});
      if (c.value <= config.max_uncorrected) continue;
      (c.name.find("repairable") != std::string::npos ? repairable : unrepairable).push_back(&c);
    }
  }
  auto message = [](const NeuronErrorCounter& c, std::size_t n) {
    return c.scope + ": " + c.name + " = " + std::to_string(c.value) + " (" + describe(c.name) + ")" + and_more(n);
  };
  CheckResult r;
  if (!unrepairable.empty())
    r = make_finding("neuron.errors", "NEURON-HW-ERR", Action::drain,
                     message(*unrepairable.front(), unrepairable.size() + repairable.size()));
  else if (!repairable.empty())
    r = make_finding("neuron.errors", "NEURON-HW-ERR", Action::reboot, message(*repairable.front(), repairable.size()));
  else if (!errors.empty())
    r = make_result("neuron.errors", Status::error, "cannot read: " + errors.front() + and_more(errors.size()));
  else if (!without_stats.empty())
    r = make_result("neuron.errors", Status::error,
                    without_stats.front() + ": no stats/hardware ECC counters in sysfs (Neuron driver older than 2.14?)" +
                        and_more(without_stats.size()));
  else
    r = make_result("neuron.errors", Status::ok,
                    "no uncorrectable errors on " + std::to_string(snap.devices.size()) + " Neuron devices");
  r.detail = {{"max_uncorrected", config.max_uncorrected}, {"counters", counters}};
  return r;
}

}  // namespace

std::vector<CheckResult> judge_neuron(const NeuronSnapshot& snap, std::uint32_t expected, const NeuronConfig& config) {
  return {judge_count(snap, expected), judge_errors(snap, config)};
}

}  // namespace ar::healthd
