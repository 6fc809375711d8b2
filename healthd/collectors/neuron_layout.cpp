#include "neuron_layout.hpp"

#include <array>

namespace ar::healthd {

namespace {
constexpr std::string_view kGuide = "Neuron Sysfs User Guide, stats/hardware";
constexpr std::string_view kCorrected = "Neuron 2.32.0 release notes, driver 2.30.2";

const std::array<NeuronCounterSpec, 5> kSpecs = {{
    {"mem_ecc_uncorrected", NeuronCounterKind::uncorrectable, "uncorrectable HBM ECC errors", {2, 14, 0}, kGuide},
    {"sram_ecc_uncorrected", NeuronCounterKind::uncorrectable, "uncorrectable SRAM ECC errors", {2, 14, 0}, kGuide},
    // In the 2.24.7.0 source; the release that added it is not documented, 2.24 is the earliest seen.
    {"mem_ecc_repairable_uncorrected", NeuronCounterKind::repairable, "repairable uncorrectable HBM ECC errors", {2, 24, 0}, kGuide},
    {"mem_ecc_corrected", NeuronCounterKind::correctable, "corrected HBM ECC errors", {2, 30, 2}, kCorrected},
    {"sram_ecc_corrected", NeuronCounterKind::correctable, "corrected SRAM ECC errors", {2, 30, 2}, kCorrected},
}};

constexpr std::array<std::string_view, 10> kComponents = {
    "hbm",       "sram",     "firmware_service_api", "firmware_service_processor", "link_intraserver",
    "link_host", "link_efa", "link_interserver",     "link_switch",                "axi_fabric",
};
}  // namespace

std::span<const NeuronCounterSpec> neuron_counter_specs() { return kSpecs; }

const NeuronCounterSpec* find_neuron_counter(std::string_view name) {
  for (const auto& s : kSpecs)
    if (s.name == name) return &s;
  return nullptr;
}

std::span<const std::string_view> neuron_health_components() { return kComponents; }

NeuronLayout neuron_layout_for(const std::optional<DriverVersion>& version) {
  if (!version) return NeuronLayout::unknown_version;
  if (!version->at_least({2, 14})) return NeuronLayout::before_ecc;
  if (!version->at_least({2, 28})) return NeuronLayout::ecc_counters;
  if (!version->at_least({2, 31})) return NeuronLayout::health_status;
  return NeuronLayout::reorganised;
}

std::string_view describe(NeuronLayout layout) {
  switch (layout) {
    case NeuronLayout::unknown_version: return "driver version unknown";
    case NeuronLayout::before_ecc: return "before 2.14 (no ECC counters in sysfs)";
    case NeuronLayout::ecc_counters: return "2.14-2.27 (stats/hardware ECC counters)";
    case NeuronLayout::health_status: return "2.28-2.30 (stats/hardware with health_status)";
    case NeuronLayout::reorganised: return "2.31 and later (reorganised tree)";
  }
  return "?";
}

}  // namespace ar::healthd
