#include "efa_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

// [checks.efa.counter_thresholds]: counter name = the rise within the window above which it counts.
Parsed<std::map<std::string, std::uint64_t>> read_thresholds(const toml::node& n) {
  const auto* t = n.as_table();
  if (t == nullptr) return std::unexpected(std::string("must be a table of counter = integer"));
  std::map<std::string, std::uint64_t> out;
  for (const auto& [k, v] : *t) {
    if (!v.is_integer() || *v.value<std::int64_t>() < 0)
      return std::unexpected("entry '" + std::string(k.str()) + "' (line " + std::to_string(k.source().begin.line) +
                             ") must be an integer, at least 0");
    out[std::string(k.str())] = static_cast<std::uint64_t>(*v.value<std::int64_t>());
  }
  return out;
}

}  // namespace

CheckSection efa_section() {
  return check_section(KeyTable<EfaConfig>()
                           .field("enabled", &EfaConfig::enabled, read_bool)
                           .field("expected_devices", &EfaConfig::expected_devices, opt_uint_in(0, 1024))
                           .field("counter_window_s", &EfaConfig::counter_window, seconds_in(1, 24 * 3600))
                           .field("counter_thresholds", &EfaConfig::counter_thresholds, read_thresholds)
                           .field("counter_action", &EfaConfig::counter_action, read_node_remedy));
}

}  // namespace ar::healthd
