#include "dcgm_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
std::expected<void, std::string> DcgmConfig::resolve_on_host() {
  if (!enabled) return {};
  return resolve_config_program(dcgmi, dcgmi_where + ": key 'dcgmi' in [checks.dcgm]");
}

CheckSection dcgm_section() {
  return check_section(KeyTable<DcgmConfig>()
                           .field("enabled", &DcgmConfig::enabled, read_bool)
                           .field_at("dcgmi", &DcgmConfig::dcgmi, &DcgmConfig::dcgmi_where, read_program)
                           .field("level", &DcgmConfig::level, uint_in(1, 4))
                           .field("timeout_s", &DcgmConfig::timeout, seconds_in(10, 4 * 3600))
                           .field("interval_s", &DcgmConfig::interval, seconds_in(60, 30L * 24 * 3600))
                           .field("action", &DcgmConfig::action, read_node_remedy),
                       // A dcgmi left at its default is named by the file alone in a lookup error.
                       [](DcgmConfig& c, const std::string& source) -> Parsed<void> {
                         if (c.dcgmi_where.empty()) c.dcgmi_where = source;
                         return {};
                       });
}

}  // namespace ar::healthd
