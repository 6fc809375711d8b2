#include "dcgm_config.hpp"

#include "actions/process.hpp"
#include "config/fields.hpp"

namespace ar::healthd {
namespace {

const KeyTable<DcgmConfig>& keys() {
  static const auto keys =
      KeyTable<DcgmConfig>()
          .field("enabled", &DcgmConfig::enabled, read_bool)
          .nested("dcgmi",
                  [](const toml::node& n, DcgmConfig& c, const std::string& source) -> Parsed<void> {
                    auto v = read_program(n);
                    if (!v) return std::unexpected(where(source, n.source()) + ": key 'dcgmi' in [checks.dcgm] " + v.error());
                    c.dcgmi = *v;
                    c.dcgmi_where = where(source, n.source());
                    return {};
                  })
          .field("level", &DcgmConfig::level, uint_in(1, 4))
          .field("timeout_s", &DcgmConfig::timeout, seconds_in(10, 4 * 3600))
          .field("interval_s", &DcgmConfig::interval, seconds_in(60, 30L * 24 * 3600))
          .field("action", &DcgmConfig::action, [](const toml::node& n) { return read_action(n); });
  return keys;
}

}  // namespace

std::expected<void, std::string> DcgmConfig::resolve_on_host() {
  if (!enabled || dcgmi.empty() || dcgmi.front() == '/') return {};
  auto found = resolve_program(dcgmi);
  if (!found) return std::unexpected(dcgmi_where + ": key 'dcgmi' in [checks.dcgm]: " + found.error());
  dcgmi = *found;
  return {};
}

CheckSection dcgm_section() {
  return {std::string(DcgmConfig::kSection), [](const toml::node* node, const std::string& source) {
            return read_check_section<DcgmConfig>(node, source, keys(), [](DcgmConfig& c, const std::string& src) -> Parsed<void> {
              if (c.dcgmi_where.empty()) c.dcgmi_where = src;
              return {};
            });
          }};
}

}  // namespace ar::healthd
