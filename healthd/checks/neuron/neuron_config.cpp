#include "neuron_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

const KeyTable<NeuronConfig>& keys() {
  auto action = [](const toml::node& n) { return read_action(n); };
  static const auto keys = KeyTable<NeuronConfig>()
                               .field("enabled", &NeuronConfig::enabled, read_bool)
                               .field("expected_devices", &NeuronConfig::expected_devices, opt_uint_in(0, 1024))
                               .field("max_uncorrected", &NeuronConfig::max_uncorrected, u64_in(0, 1000000))
                               .field("max_corrected", &NeuronConfig::max_corrected, opt_u64_in(0, 1000000000))
                               .field("corrected_action", &NeuronConfig::corrected_action, action)
                               .field("unhealthy_action", &NeuronConfig::unhealthy_action, action)
                               .field("heartbeat_stall_s", &NeuronConfig::heartbeat_stall, seconds_in(0, 24 * 3600));
  return keys;
}

}  // namespace

CheckSection neuron_section() {
  return {std::string(NeuronConfig::kSection),
          [](const toml::node* node, const std::string& source) { return read_check_section(node, source, keys()); }};
}

}  // namespace ar::healthd
