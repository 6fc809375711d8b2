#include "node_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
CheckSection node_section() {
  return check_section(KeyTable<NodeConfig>()
                           .field("enabled", &NodeConfig::enabled, read_bool)
                           .field("expected_cpus", &NodeConfig::expected_cpus, opt_uint_in(1, 100000))
                           .field("min_memory_gib", &NodeConfig::min_memory_gib, opt_number_in(0, 1e6))
                           .field("memory_slack_pct", &NodeConfig::memory_slack_pct, number_in(0, 50))
                           .field("min_shm_gib", &NodeConfig::min_shm_gib, number_in(0, 1e6))
                           .field("clock_action", &NodeConfig::clock_action, read_node_remedy)
                           .field("required_processes", &NodeConfig::required_processes, read_names));
}

}  // namespace ar::healthd
