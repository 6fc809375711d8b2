#include "kernel_log_config.hpp"

#include "checks/kernel_log/kernel_log_check.hpp"
#include "config/fields.hpp"

namespace ar::healthd {
namespace {

// A syslog level by name ("err", "warning", ...) or number (0-7).
Parsed<int> read_log_level(const toml::node& n) {
  static const std::string kWanted = "must be a syslog level: emerg, alert, crit, err, warning, notice, info, debug, or 0-7";
  if (n.is_integer()) {
    const auto v = *n.value<std::int64_t>();
    if (v < 0 || v > 7) return std::unexpected(kWanted);
    return static_cast<int>(v);
  }
  if (!n.is_string()) return std::unexpected(kWanted);
  const auto name = *n.value<std::string>();
  if (auto level = parse_log_level(name)) return *level;
  return std::unexpected(kWanted + ", not " + toml_quote(name));
}

const KeyTable<KernelLogRule>& rule_keys() {
  static const auto keys = KeyTable<KernelLogRule>()
                               .field("code", &KernelLogRule::code, read_string)
                               .field("pattern", &KernelLogRule::pattern, read_string)
                               .field("message", &KernelLogRule::message, read_string)
                               .field("action", &KernelLogRule::action, read_node_remedy)
                               .field("anchored", &KernelLogRule::anchored, read_bool)
                               .field("max_level", &KernelLogRule::max_level, read_log_level,
                                      [](int level) { return toml_quote(log_level_name(level)); })
                               .errors_at_key();
  return keys;
}

// [[checks.kernel_log.rule]] tables: each with code, pattern, action and an optional message.
Parsed<void> read_rules(const toml::node& n, KernelLogConfig& c, const std::string& source) {
  auto rules = read_table_array<KernelLogRule>(n, "checks.kernel_log.rule", source, rule_keys(),
                                               [](const KernelLogRule& rule) -> Parsed<void> {
                                                 if (rule.code.empty() || rule.pattern.empty())
                                                   return std::unexpected(std::string("a [[checks.kernel_log.rule]] needs code and pattern"));
                                                 // Compiled as the matcher compiles it (RE2: no
                                                 // backreferences, no lookarounds).
                                                 if (auto error = kernel_log_pattern_error(rule.pattern))
                                                   return std::unexpected("rule " + rule.code +
                                                                          ": pattern is not a valid regex (RE2): " + *error);
                                                 return {};
                                               },
                                               "key 'rule' in [checks.kernel_log]", true);
  if (!rules) return std::unexpected(rules.error());
  c.rules = *rules;
  return {};
}

}  // namespace

CheckSection kernel_log_section() {
  return check_section(KeyTable<KernelLogConfig>()
                           .field("enabled", &KernelLogConfig::enabled, read_bool)
                           .field("path", &KernelLogConfig::path, read_abs_path)
                           .field("poll_interval_ms", &KernelLogConfig::poll_interval, millis_in(10, 60000))
                           .field("hold_s", &KernelLogConfig::hold, seconds_in(1, 30L * 24 * 3600))
                           .field("default_rules", &KernelLogConfig::default_rules, read_bool)
                           .nested("rule", read_rules, [](const KernelLogConfig& c) { return table_array_text(c.rules, rule_keys()); }));
}

}  // namespace ar::healthd
