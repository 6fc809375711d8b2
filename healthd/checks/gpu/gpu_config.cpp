#include "gpu_config.hpp"

#include <span>

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

// The XID catalogue's "ignore" is this table's name for none; no other key takes it.
static_assert(kXidRemedies[0] == Remedy::none, "the message below names kXidRemedies after none");
Parsed<Remedy> read_xid_action(const toml::node& n) {
  if (n.is_string() && *n.value<std::string>() == "ignore") return Remedy::none;
  auto a = read_remedy(n, kXidRemedies);
  if (!a) return std::unexpected("must be one of ignore, " + remedy_names(std::span(kXidRemedies).subspan(1)));
  return a;
}
std::string xid_action_text(Remedy a) { return a == Remedy::none ? toml_quote("ignore") : config_text(a); }

// One [[checks.gpu.xid]] table as read, before it becomes a rule of the table.
struct XidEntry {
  std::optional<std::uint32_t> xid;
  std::optional<Remedy> action;
  XidRule rule;
};

const KeyTable<XidEntry>& xid_keys() {
  static const auto keys =
      KeyTable<XidEntry>()
          .field("xid", &XidEntry::xid, opt_uint_in(1, 100000))
          .field("action", &XidEntry::action,
                 [](const toml::node& n) -> Parsed<std::optional<Remedy>> {
                   auto a = read_xid_action(n);
                   if (!a) return std::unexpected(a.error());
                   return std::optional<Remedy>(*a);
                 },
                 [](const std::optional<Remedy>& a) { return a ? xid_action_text(*a) : std::string(kUnset); })
          .field_in("count", &XidEntry::rule, &XidRule::count, uint_in(1, 100000))
          .field_in("window_s", &XidEntry::rule, &XidRule::window, seconds_in(0, 30L * 24 * 3600))
          .field_in("description", &XidEntry::rule, &XidRule::description, read_string);
  return keys;
}

// [[checks.gpu.xid]] tables: xid, action, and optionally count, window_s, description.
Parsed<void> read_xid_rules(const toml::node& n, GpuConfig& c, const std::string& source) {
  auto entries = read_table_array<XidEntry>(n, "checks.gpu.xid", source, xid_keys(), [](const XidEntry& e) -> Parsed<void> {
    if (!e.xid || !e.action) return std::unexpected(std::string("a [[checks.gpu.xid]] needs xid and action"));
    if (e.rule.count > 1 && e.rule.window.count() == 0)
      return std::unexpected("XID " + std::to_string(*e.xid) + ": a count above 1 needs window_s");
    return {};
  }, "key 'xid' in [checks.gpu]", true);
  if (!entries) return std::unexpected(entries.error());
  c.xid_rules.clear();
  for (auto& e : *entries) {
    e.rule.action = *e.action;
    if (e.rule.description.empty()) e.rule.description = XidPolicy::defaults().rule_for(*e.xid).description;
    c.xid_rules[*e.xid] = e.rule;
  }
  return {};
}

// The admin's [[checks.gpu.xid]] entries as TOML text, as they were read.
std::string xid_rules_text(const GpuConfig& c) {
  std::vector<XidEntry> entries;
  for (const auto& [xid, rule] : c.xid_rules) entries.push_back({xid, rule.action, rule});
  return table_array_text(entries, xid_keys());
}

}  // namespace

CheckSection gpu_section() {
  return check_section(KeyTable<GpuConfig>()
                           .field("enabled", &GpuConfig::enabled, read_bool)
                           .field("library", &GpuConfig::library, read_text)
                           .field("deadline_ms", &GpuConfig::deadline, millis_in(100, 600000))
                           .field("events", &GpuConfig::events, read_bool)
                           .field_in("expected_count", &GpuConfig::thresholds, &GpuThresholds::expected_count, uint_in(0, 64))
                           .field_in("required", &GpuConfig::thresholds, &GpuThresholds::required, read_bool)
                           .field_in("ecc_uncorrected_max", &GpuConfig::thresholds, &GpuThresholds::ecc_uncorrected_max, u64_in(0, 1000000))
                           .field_in("retired_pages_max", &GpuConfig::thresholds, &GpuThresholds::retired_pages_max, uint_in(0, 100000))
                           .field_in("memory_action", &GpuConfig::thresholds, &GpuThresholds::memory_action, read_node_remedy)
                           .field_in("clock_slowdown_action", &GpuConfig::thresholds, &GpuThresholds::clock_slowdown_action, read_node_remedy)
                           .field_in("pcie_width_action", &GpuConfig::thresholds, &GpuThresholds::pcie_width_action, read_node_remedy)
                           .field_in("pcie_gen_action", &GpuConfig::thresholds, &GpuThresholds::pcie_gen_action, read_node_remedy)
                           .field_in("nvlink_expected_links", &GpuConfig::thresholds, &GpuThresholds::nvlink_expected_links, uint_in(0, 18))
                           .field_in("nvlink_down_action", &GpuConfig::thresholds, &GpuThresholds::nvlink_down_action, read_node_remedy)
                           .field_in("nvlink_error_rise_max", &GpuConfig::thresholds, &GpuThresholds::nvlink_error_rise_max, u64_in(0, 1000000000))
                           .field_in("nvlink_error_action", &GpuConfig::thresholds, &GpuThresholds::nvlink_error_action, read_node_remedy)
                           .field_in("temperature_max_c", &GpuConfig::thresholds, &GpuThresholds::temperature_max_c, uint_in(30, 150))
                           .field_in("temperature_action", &GpuConfig::thresholds, &GpuThresholds::temperature_action, read_node_remedy)
                           .field_in("persistence_required", &GpuConfig::thresholds, &GpuThresholds::persistence_required, read_bool)
                           .field_in("power_check", &GpuConfig::thresholds, &GpuThresholds::power_check, read_bool)
                           .field("xid_hold_s", &GpuConfig::xid_hold, seconds_in(1, 30L * 24 * 3600))
                           .field("xid_unknown_action", &GpuConfig::xid_unknown, read_xid_action, xid_action_text)
                           .field("boot_id", &GpuConfig::boot_id, read_abs_path)
                           .nested("xid", read_xid_rules, xid_rules_text));
}

}  // namespace ar::healthd
