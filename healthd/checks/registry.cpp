#include "registry.hpp"

#include "checks/dcgm/dcgm_check.hpp"
#include "checks/ec2/ec2_check.hpp"
#include "checks/edac/edac_check.hpp"
#include "checks/efa/efa_check.hpp"
#include "checks/gpu/gpu_check.hpp"
#include "checks/kernel_log/kernel_log_check.hpp"
#include "checks/neuron/neuron_check.hpp"
#include "checks/node/node_check.hpp"
#include "checks/script/script_check.hpp"
#include "checks/storage/storage_check.hpp"

namespace ar::healthd {

const std::vector<CheckKind>& check_kinds() {
  static const std::vector<CheckKind> kinds = {
      kernel_log_check_kind(),
      gpu_check_kind(),  // the NVML snapshot, then the XID check (fed by NVML events and kernel-log lines)
      dcgm_check_kind(),
      efa_check_kind(),
      neuron_check_kind(),
      node_check_kind(),
      edac_check_kind(),
      storage_check_kind(),
      ec2_check_kind(),
      script_check_kind(),
  };
  return kinds;
}

const std::vector<CheckSection>& check_sections() {
  static const std::vector<CheckSection> sections = [] {
    std::vector<CheckSection> out;
    for (const auto& kind : check_kinds()) out.push_back(kind.section);
    return out;
  }();
  return sections;
}

std::vector<DeviceInventory> device_inventories() {
  std::vector<DeviceInventory> out;
  for (const auto& kind : check_kinds())
    if (kind.inventory) out.push_back(*kind.inventory);
  return out;
}

std::vector<std::shared_ptr<Check>> build_checks(const Config& config, BuildContext& context) {
  std::vector<std::shared_ptr<Check>> checks;
  for (const auto& kind : check_kinds()) {
    const auto* settings = config.checks.find(kind.section.name);
    if (settings == nullptr) continue;  // a Config built by hand without this section
    for (auto& check : kind.build(*settings, context)) checks.push_back(std::move(check));
  }
  return checks;
}

std::expected<Config, std::string> load_config(const std::filesystem::path& file) {
  return load_config(file, check_sections());
}

std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name) {
  return parse_config(text, source_name, check_sections());
}

std::vector<ConfigValue> describe_config(const Config& config) { return describe_config(config, check_sections()); }

}  // namespace ar::healthd
