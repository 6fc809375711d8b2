#include "config.hpp"

#include <unistd.h>  // gethostname

#include <fmt/format.h>

#include "config/config_files.hpp"
#include "config/fields.hpp"
#include "config/profiles.hpp"
#include "runtime/process.hpp"

namespace ar::healthd {

bool is_valid_log_level(const std::string& level) {
  return level == "trace" || level == "debug" || level == "info" || level == "warn" || level == "error";
}

std::expected<void, std::string> check_node_name(const std::string& name) {
  // The node name is part of paths (%n in socket, state_dir, host_root) and of Slurm commands.
  if (name.empty()) return std::unexpected(std::string("must not be empty"));
  if (name.size() > 255) return std::unexpected(std::string("must be at most 255 bytes"));
  if (name == "." || name == "..") return std::unexpected("must not be '" + name + "'");
  for (unsigned char c : name) {
    if (c == '/') return std::unexpected(std::string("must not contain '/' (it is used in paths)"));
    if (c <= 0x20 || c == 0x7f) return std::unexpected(std::string("must not contain spaces, NUL or control characters"));
  }
  return {};
}

std::string default_node_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  std::string name(buf);
  return name.substr(0, name.find('.'));
}

std::string config_text(NoticeKind k) { return toml_quote(to_string(k)); }

// How config_text shows [policy] requeue_priority (found by argument-dependent lookup).
static std::string config_text(RequeuePriority p) { return toml_quote(p == RequeuePriority::top ? "top" : "keep"); }

static std::string config_text(StallAction a) {
  return toml_quote(a == StallAction::requeue ? "requeue" : a == StallAction::cancel ? "cancel" : "warn");
}

static std::string config_text(StragglerAction a) { return toml_quote(a == StragglerAction::report ? "report" : "exclude"); }

namespace {

// [daemon] child_env: names of healthd's environment variables its children also get.
Parsed<std::vector<std::string>> read_env_names(const toml::node& n) {
  const auto* arr = n.as_array();
  if (arr == nullptr) return std::unexpected(std::string("must be an array of variable names"));
  std::vector<std::string> out;
  for (const auto& item : *arr) {
    auto name = item.value<std::string>();
    if (!item.is_string() || !is_env_name(*name))
      return std::unexpected(std::string("must be an array of variable names ([A-Za-z_][A-Za-z0-9_]*)"));
    if (*name == "PATH" || *name == "LANG" || *name == "LC_ALL" || *name == "HOME")
      return std::unexpected("lists " + *name + ", which children always get with a fixed value");
    out.push_back(*name);
  }
  return out;
}

Parsed<RequeuePriority> read_requeue_priority(const toml::node& n) {
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (v == "top") return RequeuePriority::top;
  if (v == "keep") return RequeuePriority::keep;
  return std::unexpected(std::string("must be \"top\" (a requeued job starts before other pending jobs) or \"keep\""));
}

Parsed<StallAction> read_stall_action(const toml::node& n) {
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (v == "requeue") return StallAction::requeue;
  if (v == "cancel") return StallAction::cancel;
  if (v == "warn") return StallAction::warn;
  return std::unexpected(std::string("must be \"requeue\" (the job is resumed from its checkpoint), \"cancel\" or \"warn\""));
}

Parsed<StragglerAction> read_straggler_action(const toml::node& n) {
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (v == "report") return StragglerAction::report;
  if (v == "exclude") return StragglerAction::exclude;
  return std::unexpected(std::string(
      "must be \"report\" (a notice, the metric, healthctl) or \"exclude\" (also requeued without the node at the "
      "job's next checkpoint)"));
}

Parsed<std::string> read_node_name(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  auto v = *n.value<std::string>();
  if (auto ok = check_node_name(v); !ok) return std::unexpected(ok.error());
  return v;
}

Parsed<std::string> read_log_level(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  auto v = *n.value<std::string>();
  if (!is_valid_log_level(v)) return std::unexpected(std::string("must be one of trace, debug, info, warn, error"));
  return v;
}

const KeyTable<Config>& daemon_keys() {
  static const auto keys = KeyTable<Config>()
                               .field("node_name", &Config::node_name, read_node_name)
                               .field("socket", &Config::socket, read_abs_path)
                               .field("state_dir", &Config::state_dir, read_abs_path)
                               .field("host_root", &Config::host_root, read_abs_path)
                               .field("log_level", &Config::log_level, read_log_level)
                               .field("ended_job_retention_s", &Config::ended_job_retention, seconds_in(0, 30L * 24 * 3600))
                               .field("instance_type", &Config::instance_type, read_string)
                               .field("profile_dir", &Config::profile_dir, read_abs_path)
                               .field("child_env", &Config::child_env, read_env_names);
  return keys;
}

const KeyTable<HookConfig>& hook_keys() {
  static const auto keys =
      KeyTable<HookConfig>()
          .field("name", &HookConfig::name, read_text)
          .field("on", &HookConfig::on,
                 [](const toml::node& n) -> Parsed<std::vector<Action>> {
                   const auto* arr = n.as_array();
                   const std::string what = "must be an array of " + action_names(kHookable);
                   if (arr == nullptr || arr->empty()) return std::unexpected(what);
                   std::vector<Action> on;
                   for (const auto& item : *arr) {
                     auto a = read_action(item, kHookable);
                     if (!a) return std::unexpected(what);
                     on.push_back(*a);
                   }
                   return on;
                 })
          .field("timeout_s", &HookConfig::timeout, seconds_in(1, 3600))
          .field("attempts", &HookConfig::attempts, uint_in(1, 100))
          .field_at("command", &HookConfig::command, &HookConfig::command_where, read_argv);
  return keys;
}

Parsed<void> read_hooks(const toml::node& n, PolicyConfig& policy, const std::string& source) {
  auto hooks = read_table_array<HookConfig>(n, "policy.hook", source, hook_keys(), [](const HookConfig& h) -> Parsed<void> {
    if (h.name.empty() || h.on.empty() || h.command.empty()) return std::unexpected(std::string("[[policy.hook]] needs name, on and command"));
    return {};
  });
  if (!hooks) return std::unexpected(hooks.error());
  for (std::size_t i = 0; i < hooks->size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if ((*hooks)[i].name == (*hooks)[j].name)
        return std::unexpected((*hooks)[i].command_where + ": [[policy.hook]] '" + (*hooks)[i].name + "' is named twice");
  policy.hooks = *hooks;
  return {};
}

const KeyTable<PolicyConfig>& policy_keys() {
  static const auto keys = KeyTable<PolicyConfig>()
                               .field("max_resumes", &PolicyConfig::max_resumes, uint_in(0, 1000))
                               .field("resume_on_any_failure", &PolicyConfig::resume_on_any_failure, read_bool)
                               .field("recovery_passes", &PolicyConfig::recovery_passes, uint_in(1, 1000))
                               .field("flap_max_faults", &PolicyConfig::flap_max_faults, uint_in(1, 1000))
                               .field("flap_window_s", &PolicyConfig::flap_window, seconds_in(1, 30L * 24 * 3600))
                               .field("max_drained_share", &PolicyConfig::max_drained_share, read_share)
                               .field("check_interval_s", &PolicyConfig::check_interval, seconds_in(1, 24 * 3600))
                               .field("check_deadline_s", &PolicyConfig::check_deadline, seconds_in(1, 3600))
                               .field("requeue_priority", &PolicyConfig::requeue_priority, read_requeue_priority)
                               .field("report_only", &PolicyConfig::report_only, read_bool)
                               .field("stall_action", &PolicyConfig::stall_action, read_stall_action)
                               .field("step_rerun", &PolicyConfig::step_rerun, read_bool)
                               .field("suspect_max_share", &PolicyConfig::suspect_max_share, read_share)
                               .field("lemon_suspicions", &PolicyConfig::lemon_suspicions, uint_in(0, 1000))
                               .field("lemon_window_s", &PolicyConfig::lemon_window, seconds_in(60, 365L * 24 * 3600))
                               .field("lemon_distinct_users", &PolicyConfig::lemon_distinct_users, read_bool)
                               .field("straggler_share", &PolicyConfig::straggler_share, read_share)
                               .field("straggler_window_s", &PolicyConfig::straggler_window, seconds_in(10, 24 * 3600))
                               .field("straggler_action", &PolicyConfig::straggler_action, read_straggler_action)
                               .nested("hook", read_hooks, [](const PolicyConfig& p) { return table_array_text(p.hooks, hook_keys()); });
  return keys;
}

const KeyTable<SlurmConfig>& slurm_keys() {
  static const auto keys = KeyTable<SlurmConfig>()
                               .field("scontrol", &SlurmConfig::scontrol, read_program)
                               .field("timeout_s", &SlurmConfig::timeout, seconds_in(1, 600))
                               .field("user", &SlurmConfig::user, read_string);
  return keys;
}

const KeyTable<ServerLimits>& server_keys() {
  static const auto keys = KeyTable<ServerLimits>()
                               .field("max_connections", &ServerLimits::max_connections, uint_in(16, 1000000))
                               .field("root_reserved", &ServerLimits::root_reserved, uint_in(1, 1000000))
                               .field("max_connections_per_uid", &ServerLimits::max_connections_per_uid, uint_in(1, 1000000))
                               .field("idle_timeout_ms", &ServerLimits::idle_timeout, millis_in(100, 3600000))
                               .field("message_timeout_ms", &ServerLimits::message_timeout, millis_in(100, 3600000))
                               .field("write_timeout_ms", &ServerLimits::write_timeout, millis_in(100, 3600000));
  return keys;
}

// "HOST:PORT": HOST an IPv4 address or "localhost", PORT 1-65535. The metrics endpoint
// (telemetry/metrics_endpoint) listens on IPv4 only, and a bad address such as 999.1.1.1 must not be
// read as another one, so the address is checked here, where the admin is told.
Parsed<std::string> read_listen_address(const toml::node& n) {
  auto v = n.is_string() ? *n.value<std::string>() : std::string("\x01");
  if (v.empty()) return v;
  const std::string what = "must be \"IPV4:PORT\" or \"localhost:PORT\" (\"127.0.0.1:9464\"), or \"\" for none";
  auto number = [](const std::string& s, int max) {
    if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
      return -1;
    const int value = std::stoi(s);
    return value <= max ? value : -1;
  };
  auto colon = v.rfind(':');
  if (colon == std::string::npos) return std::unexpected(what);
  const std::string host = v.substr(0, colon), port = v.substr(colon + 1);
  if (number(port, 65535) < 1) return std::unexpected(what);
  if (host == "localhost") return v;
  int parts = 0;
  for (std::size_t start = 0;; ++parts) {
    auto dot = host.find('.', start);
    if (number(host.substr(start, dot == std::string::npos ? std::string::npos : dot - start), 255) < 0)
      return std::unexpected(what);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (parts != 3) return std::unexpected(what);
  return v;
}

Parsed<std::filesystem::path> read_optional_abs_path(const toml::node& n) {
  if (n.is_string() && n.value<std::string>()->empty()) return std::filesystem::path();
  return read_abs_path(n);
}

// A webhook URL: http(s), and no byte that could split a header or a log line.
Parsed<std::string> read_webhook_url(const toml::node& n) {
  if (n.is_string() && n.value<std::string>()->empty()) return std::string();
  auto v = read_url(n);
  if (!v) return v;
  for (unsigned char c : *v)
    if (c <= 0x20 || c >= 0x7f) return std::unexpected(std::string("must not contain spaces, control or non-ASCII bytes"));
  return v;
}

Parsed<std::vector<NoticeKind>> read_notice_kinds(const toml::node& n) {
  std::string names;
  for (auto k : all_notice_kinds()) names += (names.empty() ? "" : ", ") + std::string(to_string(k));
  const auto* arr = n.as_array();
  if (arr == nullptr) return std::unexpected("must be an array of " + names);
  std::vector<NoticeKind> out;
  for (const auto& item : *arr) {
    auto k = item.is_string() ? notice_kind_from_string(*item.value<std::string>()) : std::nullopt;
    if (!k) return std::unexpected("must be an array of " + names);
    if (std::find(out.begin(), out.end(), *k) == out.end()) out.push_back(*k);
  }
  return out;
}

const KeyTable<MetricsConfig>& metrics_keys() {
  static const auto keys = KeyTable<MetricsConfig>()
                               .field("listen", &MetricsConfig::listen, read_listen_address)
                               .field("textfile", &MetricsConfig::textfile, read_optional_abs_path)
                               .field("textfile_interval_s", &MetricsConfig::textfile_interval, seconds_in(1, 3600));
  return keys;
}

const KeyTable<NotifyConfig>& notify_keys() {
  static const auto keys = KeyTable<NotifyConfig>()
                               .field("webhook_url", &NotifyConfig::webhook_url, read_webhook_url,
                                      // a Slack hook's URL is its secret: --check-config shows that one is
                                      // set and a fingerprint (so a reload sees a change), never the URL
                                      [](const std::string& url) {
                                        return url.empty() ? toml_quote(url)
                                                           : "\"(secret " + fmt::format("{:08x}", static_cast<std::uint32_t>(std::hash<std::string>{}(url))) + ")\"";
                                      })
                               .field("webhook_url_file", &NotifyConfig::webhook_url_file, read_optional_abs_path)
                               .field("on", &NotifyConfig::on, read_notice_kinds)
                               .field("timeout_ms", &NotifyConfig::timeout, millis_in(100, 600000))
                               .field("attempts", &NotifyConfig::attempts, uint_in(1, 100))
                               .field("max_backoff_s", &NotifyConfig::max_backoff, seconds_in(1, 24 * 3600))
                               .field("queue_size", &NotifyConfig::queue_size, uint_in(1, 100000))
                               .field("action_failing_after", &NotifyConfig::action_failing_after, uint_in(1, 1000));
  return keys;
}

// An argv that may be left empty (no program).
Parsed<std::vector<std::string>> read_optional_argv(const toml::node& n) {
  if (const auto* a = n.as_array(); a != nullptr && a->empty()) return std::vector<std::string>{};
  return read_argv(n);
}

const KeyTable<CureChain>& cure_chain_keys() {
  static const auto keys =
      KeyTable<CureChain>()
          .field("code", &CureChain::code, read_text)
          .field("xid", &CureChain::xid, opt_uint_in(0, 100000))
          .field_at("steps", &CureChain::steps, &CureChain::where, [](const toml::node& n) -> Parsed<std::vector<Action>> {
            const auto* arr = n.as_array();
            const std::string what = "must be an array of " + action_names(kCureSteps) + " (empty: drain only)";
            if (arr == nullptr) return std::unexpected(what);
            std::vector<Action> steps;
            for (const auto& item : *arr) {
              auto a = read_action(item, kCureSteps);
              if (!a) return std::unexpected(what);
              if (std::find(steps.begin(), steps.end(), *a) != steps.end())
                return std::unexpected("names " + to_string(*a) + " twice: a step that did not cure the fault would not cure it again");
              steps.push_back(*a);
            }
            return steps;
          });
  return keys;
}

Parsed<void> read_cure_chains(const toml::node& n, CureConfig& cure, const std::string& source) {
  auto chains = read_table_array<CureChain>(n, "cure.chain", source, cure_chain_keys(), [](const CureChain& c) -> Parsed<void> {
    if (c.code.empty() == !c.xid.has_value())
      return std::unexpected(c.where + ": [[cure.chain]] needs one of code or xid");
    return {};
  });
  if (!chains) return std::unexpected(chains.error());
  cure.chains = *chains;
  return {};
}

const KeyTable<CureConfig>& cure_keys() {
  static const auto keys =
      KeyTable<CureConfig>()
          .field("reset_command", &CureConfig::reset_command, read_argv)
          .field("reset_timeout_s", &CureConfig::reset_timeout, seconds_in(1, 3600))
          .field("reset_wait_s", &CureConfig::reset_wait, seconds_in(1, 24 * 3600))
          .field("reset_blocked_by_persistence", &CureConfig::reset_blocked_by_persistence, read_bool)
          .field("deep_check", &CureConfig::deep_check, read_optional_argv)
          .field("deep_check_timeout_s", &CureConfig::deep_check_timeout, seconds_in(1, 24 * 3600))
          .field("deep_check_before_return", &CureConfig::deep_check_before_return, read_bool)
          .field("burn_in_idle_s", &CureConfig::burn_in_idle, seconds_in(0, 30L * 24 * 3600))
          .field("burn_in_every_s", &CureConfig::burn_in_every, seconds_in(60, 30L * 24 * 3600))
          .nested("chain", read_cure_chains, [](const CureConfig& c) { return table_array_text(c.chains, cure_chain_keys()); });
  return keys;
}

const std::vector<std::string>& core_sections() {
  static const std::vector<std::string> names = {"checks", "cure", "daemon", "metrics", "notify", "policy", "server", "slurm"};
  return names;
}

// Where `path` ("slurm.scontrol") was read (the origins recorded at load: a drop-in's own position),
// or the file alone for a key left at its default.
std::string where_key(const Config& config, const std::string& path, const std::string& source) {
  auto at = config.origins.find(path);
  return at != config.origins.end() ? at->second : source;
}

// Records where each key in `table` (at `path`) was read: a value by its own position, an array of
// tables by each item's.
void record_origins(const toml::table& table, const std::string& path, const std::string& source,
                    std::map<std::string, std::string>& origins) {
  for (const auto& [key, value] : table) {
    const std::string at = path.empty() ? std::string(key.str()) : path + "." + std::string(key.str());
    if (const auto* sub = value.as_table()) {
      // A table may be one key's value ([checks.efa.counter_thresholds]): it is where it starts.
      origins.emplace(at, where(source, sub->source()));
      record_origins(*sub, at, source, origins);
    } else if (const auto* arr = value.as_array(); arr != nullptr && arr->is_array_of_tables() && !arr->empty()) {
      std::string items;
      for (const auto& item : *arr) items += (items.empty() ? "" : ", ") + where(source, item.source());
      origins[at] = items;
    } else {
      origins[at] = where(source, value.source());
    }
  }
}

// [checks]: each sub-table goes to the check that registered its name; every registered check gets
// its settings, the defaults where the file has no section.
Parsed<void> read_checks(const toml::node* checks, std::span<const CheckSection> sections, const std::string& source,
                         Config& config) {
  const toml::table* table = nullptr;
  if (checks != nullptr) {
    table = checks->as_table();
    if (table == nullptr) return std::unexpected(where(source, checks->source()) + ": [checks] must be a table");
    std::vector<std::string> known;
    for (const auto& s : sections) known.push_back(s.name);
    for (const auto& [key, value] : *table) {
      std::string name(key.str());
      if (std::none_of(sections.begin(), sections.end(), [&](const CheckSection& s) { return s.name == name; })) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        return std::unexpected(where(source, key.source()) + ": unknown section [checks." + name + "]" +
                               did_you_mean(name, known) + " (checks: " + list + ")");
      }
    }
  }
  for (const auto& section : sections) {
    const toml::node* node = table != nullptr ? table->get(section.name) : nullptr;
    auto settings = section.read(node, source);
    if (!settings) return std::unexpected(settings.error());
    config.checks.set(section.name, std::move(*settings));
  }
  return {};
}

Parsed<Config> read_config(const toml::table& root, const std::string& source, std::span<const CheckSection> sections) {
  Config config;
  record_origins(root, "", source, config.origins);
  for (const auto& [key, value] : root) {
    std::string name(key.str());
    Parsed<void> r;
    if (name == "daemon") r = daemon_keys().read(value, name, source, config);
    else if (name == "policy") r = policy_keys().read(value, name, source, config.policy);
    else if (name == "slurm") r = slurm_keys().read(value, name, source, config.slurm);
    else if (name == "server") r = server_keys().read(value, name, source, config.server);
    else if (name == "metrics") r = metrics_keys().read(value, name, source, config.metrics);
    else if (name == "cure") r = cure_keys().read(value, name, source, config.policy.cure);
    else if (name == "notify") r = notify_keys().read(value, name, source, config.notify);
    else if (name != "checks")
      r = std::unexpected(where(source, key.source()) + ": unknown section [" + name + "]" + did_you_mean(name, core_sections()));
    if (!r) return std::unexpected(r.error());
  }
  if (auto r = read_checks(root.get("checks"), sections, source, config); !r) return std::unexpected(r.error());
  if (config.server.root_reserved >= config.server.max_connections)
    return std::unexpected(source + ": [server] root_reserved (" + std::to_string(config.server.root_reserved) +
                           ") must be less than max_connections (" + std::to_string(config.server.max_connections) +
                           "), or users could never connect");
  if (!config.notify.webhook_url.empty() && !config.notify.webhook_url_file.empty())
    return std::unexpected(source + ": [notify] sets both webhook_url and webhook_url_file; set one");
  if (config.node_name.empty()) config.node_name = default_node_name();
  return config;
}

// Program names become absolute paths in the children's fixed PATH, once, here: at run time no
// PATH is looked at. An absolute path is kept as it is (it may hold %n, expanded later).
Parsed<void> resolve_programs(Config& config, const std::string& source) {
  if (auto r = resolve_config_program(config.slurm.scontrol, where_key(config, "slurm.scontrol", source) + ": key 'scontrol' in [slurm]");
      !r)
    return r;
  for (auto& hook : config.policy.hooks)
    if (auto r = resolve_config_program(hook.command.front(), hook.command_where + ": [[policy.hook]] '" + hook.name + "' command");
        !r)
      return r;
  // The reset program may be missing on a node without NVIDIA's tools: the config still loads, and
  // each reset fails saying so (the chain goes on to its next step).
  if (auto& reset = config.policy.cure.reset_command.front(); reset.find('/') == std::string::npos)
    if (auto found = resolve_program(reset)) reset = *found;
  if (!config.policy.cure.deep_check.empty())
    if (auto r = resolve_config_program(config.policy.cure.deep_check.front(),
                                        where_key(config, "cure.deep_check", source) + ": key 'deep_check' in [cure]");
        !r)
      return r;
  for (auto& [name, settings] : config.checks)
    if (auto r = settings->resolve_on_host(); !r) return r;
  return {};
}

// A named profile must exist (in profile_dir or built in); "auto" is detected at start.
Parsed<void> check_profile(const Config& config, const std::string& source) {
  if (config.instance_type.empty() || config.instance_type == "auto") return {};
  auto profile = resolve_profile(config.instance_type, config.profile_dir);
  if (profile) return {};
  if (profile.error().in_profile_file) return std::unexpected(profile.error().message);  // with its own position
  return std::unexpected(where_key(config, "daemon.instance_type", source) + ": key 'instance_type' in [daemon] " +
                         profile.error().message);
}

}  // namespace

std::vector<ConfigValue> describe_config(const Config& config, std::span<const CheckSection> sections) {
  std::vector<ConfigValue> out;
  auto add = [&](const std::string& section, const std::vector<std::pair<std::string, std::string>>& keys) {
    for (const auto& [key, value] : keys) out.push_back({key.empty() ? section : section + "." + key, value});
  };
  add("daemon", daemon_keys().show(config));
  add("policy", policy_keys().show(config.policy));
  add("slurm", slurm_keys().show(config.slurm));
  add("server", server_keys().show(config.server));
  add("cure", cure_keys().show(config.policy.cure));
  add("metrics", metrics_keys().show(config.metrics));
  add("notify", notify_keys().show(config.notify));
  for (const auto& section : sections)
    if (const auto* settings = config.checks.find(section.name); settings != nullptr && section.describe)
      add("checks." + section.name, section.describe(*settings));
  return out;
}

std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name,
                                                std::span<const CheckSection> sections) {
  auto root = parse_toml(text, source_name);
  if (!root) return std::unexpected(root.error());
  return read_config(*root, source_name, sections);
}

std::filesystem::path drop_in_dir(const std::filesystem::path& file) {
  auto dir = file;
  dir += ".d";
  return dir;
}

std::expected<Config, std::string> load_config(const std::filesystem::path& file, std::span<const CheckSection> sections) {
  const auto source = file.string();
  std::vector<std::filesystem::path> files;
  auto root = read_config_files(file, files);
  if (!root) return std::unexpected(root.error());
  auto config = read_config(*root, source, sections);
  if (!config) return config;
  config->files = std::move(files);
  if (auto r = resolve_programs(*config, source); !r) return std::unexpected(r.error());
  if (auto r = check_profile(*config, source); !r) return std::unexpected(r.error());
  return config;
}

}  // namespace ar::healthd
