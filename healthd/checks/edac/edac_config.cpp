#include "edac_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
CheckSection edac_section() {
  return check_section(KeyTable<EdacConfig>()
                           .field("enabled", &EdacConfig::enabled, read_bool)
                           .field("uncorrected_action", &EdacConfig::uncorrected_action, read_node_remedy)
                           .field("max_corrected_rise", &EdacConfig::max_corrected_rise, opt_u64_in(0, 1000000000))
                           .field("corrected_action", &EdacConfig::corrected_action, read_node_remedy)
                           .field("corrected_window_s", &EdacConfig::corrected_window, seconds_in(60, 30 * 24 * 3600)));
}

}  // namespace ar::healthd
