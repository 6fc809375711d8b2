#include "gpu_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

// The XID catalogue's "ignore" is this table's name for none; no other key takes it.
Parsed<Action> read_xid_action(const toml::node& n) {
  if (n.is_string() && *n.value<std::string>() == "ignore") return Action::none;
  auto a = read_action(n, kXidActions);
  if (!a) return std::unexpected(std::string("must be one of ignore, warn, restart_app, reset_gpu, drain, reboot"));
  return a;
}

// One [[checks.gpu.xid]] table as read, before it becomes a rule of the table.
struct XidEntry {
  std::optional<std::uint32_t> xid;
  std::optional<Action> action;
  XidRule rule;
};

const KeyTable<XidEntry>& xid_keys() {
  static const auto keys =
      KeyTable<XidEntry>()
          .field("xid", &XidEntry::xid, opt_uint_in(1, 100000))
          .field("action", &XidEntry::action,
                 [](const toml::node& n) -> Parsed<std::optional<Action>> {
                   auto a = read_xid_action(n);
                   if (!a) return std::unexpected(a.error());
                   return std::optional<Action>(*a);
                 })
          .custom("count",
                  [](const toml::node& n, XidEntry& e) -> Parsed<void> {
                    auto v = uint_in(1, 100000)(n);
                    if (!v) return std::unexpected(v.error());
                    e.rule.count = *v;
                    return {};
                  })
          .custom("window_s",
                  [](const toml::node& n, XidEntry& e) -> Parsed<void> {
                    auto v = seconds_in(0, 30L * 24 * 3600)(n);
                    if (!v) return std::unexpected(v.error());
                    e.rule.window = *v;
                    return {};
                  })
          .custom("description", [](const toml::node& n, XidEntry& e) -> Parsed<void> {
            auto v = read_string(n);
            if (!v) return std::unexpected(v.error());
            e.rule.description = *v;
            return {};
          });
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

// A member of the GPU thresholds.
template <class T, class R>
KeyTable<GpuConfig>::Field threshold(T GpuThresholds::*member, R read) {
  return [member, read](const toml::node& n, GpuConfig& c) -> Parsed<void> {
    auto v = read(n);
    if (!v) return std::unexpected(v.error());
    c.thresholds.*member = *v;
    return {};
  };
}

}  // namespace

CheckSection gpu_section() {
  return check_section(KeyTable<GpuConfig>()
                           .field("enabled", &GpuConfig::enabled, read_bool)
                           .field("library", &GpuConfig::library, read_text)
                           .field("deadline_ms", &GpuConfig::deadline, millis_in(100, 600000))
                           .field("events", &GpuConfig::events, read_bool)
                           .custom("expected_count", threshold(&GpuThresholds::expected_count, uint_in(0, 64)))
                           .custom("required", threshold(&GpuThresholds::required, read_bool))
                           .custom("ecc_uncorrected_max", threshold(&GpuThresholds::ecc_uncorrected_max, u64_in(0, 1000000)))
                           .custom("retired_pages_max", threshold(&GpuThresholds::retired_pages_max, uint_in(0, 100000)))
                           .custom("memory_action", threshold(&GpuThresholds::memory_action, read_node_action))
                           .custom("clock_slowdown_action", threshold(&GpuThresholds::clock_slowdown_action, read_node_action))
                           .custom("pcie_width_action", threshold(&GpuThresholds::pcie_width_action, read_node_action))
                           .custom("pcie_gen_action", threshold(&GpuThresholds::pcie_gen_action, read_node_action))
                           .custom("nvlink_expected_links", threshold(&GpuThresholds::nvlink_expected_links, uint_in(0, 18)))
                           .custom("nvlink_down_action", threshold(&GpuThresholds::nvlink_down_action, read_node_action))
                           .custom("nvlink_error_rise_max", threshold(&GpuThresholds::nvlink_error_rise_max, u64_in(0, 1000000000)))
                           .custom("nvlink_error_action", threshold(&GpuThresholds::nvlink_error_action, read_node_action))
                           .custom("temperature_max_c", threshold(&GpuThresholds::temperature_max_c, uint_in(30, 150)))
                           .custom("temperature_action", threshold(&GpuThresholds::temperature_action, read_node_action))
                           .custom("persistence_required", threshold(&GpuThresholds::persistence_required, read_bool))
                           .custom("power_check", threshold(&GpuThresholds::power_check, read_bool))
                           .field("xid_hold_s", &GpuConfig::xid_hold, seconds_in(1, 30L * 24 * 3600))
                           .field("xid_unknown_action", &GpuConfig::xid_unknown, read_xid_action)
                           .field("boot_id", &GpuConfig::boot_id, read_abs_path)
                           .nested("xid", read_xid_rules));
}

}  // namespace ar::healthd
