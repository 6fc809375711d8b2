#include "edac_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

const KeyTable<EdacConfig>& keys() {
  auto action = [](const toml::node& n) { return read_action(n); };
  static const auto keys = KeyTable<EdacConfig>()
                               .field("enabled", &EdacConfig::enabled, read_bool)
                               .field("uncorrected_action", &EdacConfig::uncorrected_action, action)
                               .field("max_corrected_rise", &EdacConfig::max_corrected_rise, opt_u64_in(0, 1000000000))
                               .field("corrected_action", &EdacConfig::corrected_action, action)
                               .field("corrected_window_s", &EdacConfig::corrected_window, seconds_in(60, 30 * 24 * 3600));
  return keys;
}

}  // namespace

CheckSection edac_section() {
  return {std::string(EdacConfig::kSection),
          [](const toml::node* node, const std::string& source) { return read_check_section(node, source, keys()); }};
}

}  // namespace ar::healthd
