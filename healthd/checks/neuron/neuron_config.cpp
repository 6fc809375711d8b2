#include "neuron_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
CheckSection neuron_section() {
  return check_section(KeyTable<NeuronConfig>()
                           .field("enabled", &NeuronConfig::enabled, read_bool)
                           .field("expected_devices", &NeuronConfig::expected_devices, opt_uint_in(0, 1024))
                           .field("max_uncorrected", &NeuronConfig::max_uncorrected, u64_in(0, 1000000))
                           .field("max_corrected", &NeuronConfig::max_corrected, opt_u64_in(0, 1000000000))
                           .field("corrected_action", &NeuronConfig::corrected_action, read_node_remedy)
                           .field("unhealthy_action", &NeuronConfig::unhealthy_action, read_node_remedy)
                           .field("heartbeat_stall_s", &NeuronConfig::heartbeat_stall, seconds_in(0, 24 * 3600)));
}

}  // namespace ar::healthd
