#include "config.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <unistd.h>

#include <toml++/toml.h>

#include "checks/kernel_log_check.hpp"
#include "actions/process.hpp"
#include "config/profiles.hpp"

namespace ar::healthd {
namespace {

std::string where(const std::string& source, const toml::source_region& r) {
  return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

// A number as an admin writes it (1000000, 0.5), for error messages.
std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// One known key of a table: how to read it into the Config, or an error message.
using Reader = std::function<std::expected<void, std::string>(const toml::node&, Config&)>;

Reader string_key(std::string Config::*member) {
  return [member](const toml::node& n, Config& c) -> std::expected<void, std::string> {
    auto v = n.value<std::string>();
    if (!n.is_string() || !v) return std::unexpected("must be a string");
    c.*member = *v;
    return {};
  };
}

Reader path_key(std::filesystem::path Config::*member) {
  return [member](const toml::node& n, Config& c) -> std::expected<void, std::string> {
    if (!n.is_string()) return std::unexpected("must be a string");
    std::filesystem::path p = *n.value<std::string>();
    if (!p.is_absolute()) return std::unexpected("must be an absolute path");
    c.*member = p;
    return {};
  };
}

Reader seconds_key(std::chrono::seconds Config::*member, long min, long max) {
  return [=](const toml::node& n, Config& c) -> std::expected<void, std::string> {
    if (!n.is_integer()) return std::unexpected("must be an integer (seconds)");
    long v = static_cast<long>(*n.value<int64_t>());
    if (v < min || v > max)
      return std::unexpected("must be between " + std::to_string(min) + " and " + std::to_string(max));
    c.*member = std::chrono::seconds(v);
    return {};
  };
}

// Readers for nested structs: `get` picks the member struct out of the Config.
template <typename S, typename T>
Reader nested(S Config::*outer, T S::*inner, std::function<std::expected<T, std::string>(const toml::node&)> read) {
  return [=](const toml::node& n, Config& c) -> std::expected<void, std::string> {
    auto v = read(n);
    if (!v) return std::unexpected(v.error());
    (c.*outer).*inner = *v;
    return {};
  };
}

std::function<std::expected<std::uint32_t, std::string>(const toml::node&)> uint_in(std::int64_t min, std::int64_t max) {
  return [=](const toml::node& n) -> std::expected<std::uint32_t, std::string> {
    if (!n.is_integer()) return std::unexpected("must be an integer");
    auto v = *n.value<std::int64_t>();
    if (v < min || v > max) return std::unexpected("must be between " + std::to_string(min) + " and " + std::to_string(max));
    return static_cast<std::uint32_t>(v);
  };
}

template <typename D>
std::function<std::expected<D, std::string>(const toml::node&)> duration_in(std::int64_t min, std::int64_t max,
                                                                            const char* unit) {
  return [=](const toml::node& n) -> std::expected<D, std::string> {
    if (!n.is_integer()) return std::unexpected(std::string("must be an integer (") + unit + ")");
    auto v = *n.value<std::int64_t>();
    if (v < min || v > max) return std::unexpected("must be between " + std::to_string(min) + " and " + std::to_string(max));
    return D(v);
  };
}

std::expected<bool, std::string> read_bool(const toml::node& n) {
  if (!n.is_boolean()) return std::unexpected(std::string("must be true or false"));
  return *n.value<bool>();
}

std::expected<std::string, std::string> read_string(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  return *n.value<std::string>();
}

std::expected<std::filesystem::path, std::string> read_abs_path(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  std::filesystem::path p = *n.value<std::string>();
  if (!p.is_absolute()) return std::unexpected(std::string("must be an absolute path"));
  return p;
}

std::expected<double, std::string> read_share(const toml::node& n) {
  double v = 0;
  if (n.is_floating_point()) v = *n.value<double>();
  else if (n.is_integer()) v = static_cast<double>(*n.value<std::int64_t>());
  else return std::unexpected(std::string("must be a number between 0 and 1"));
  // Written so that nan fails too: every comparison with nan is false.
  if (!(v >= 0 && v <= 1)) return std::unexpected(std::string("must be a number between 0 and 1"));
  return v;
}

// A string that must say something: empty would be a silent "default" or a program named "".
// A NUL byte would be cut off where the value reaches the C world (paths, argv).
std::expected<std::string, std::string> read_text(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  auto v = *n.value<std::string>();
  if (v.empty()) return std::unexpected(std::string("must not be empty"));
  if (v.find('\0') != std::string::npos) return std::unexpected(std::string("must not contain a NUL byte"));
  return v;
}

// A program: an absolute path, or a bare name resolved in the children's fixed PATH when the
// config is loaded (never a relative path, which would depend on the daemon's working directory).
std::expected<std::string, std::string> read_program(const toml::node& n) {
  auto v = read_text(n);
  if (!v) return v;
  if (v->front() != '/' && v->find('/') != std::string::npos)
    return std::unexpected(std::string("must be an absolute path or a program name without '/'"));
  return v;
}

// [daemon] child_env: names of healthd's environment variables its children also get.
std::expected<std::vector<std::string>, std::string> read_env_names(const toml::node& n) {
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

// Readers for the hardware checks' sections.
std::function<std::expected<std::optional<std::uint32_t>, std::string>(const toml::node&)> opt_uint_in(std::int64_t min,
                                                                                                       std::int64_t max) {
  return [=](const toml::node& n) -> std::expected<std::optional<std::uint32_t>, std::string> {
    auto v = uint_in(min, max)(n);
    if (!v) return std::unexpected(v.error());
    return std::optional<std::uint32_t>(*v);
  };
}

std::function<std::expected<double, std::string>(const toml::node&)> number_in(double min, double max) {
  return [=](const toml::node& n) -> std::expected<double, std::string> {
    if (!n.is_number()) return std::unexpected(std::string("must be a number"));
    double v = *n.value<double>();
    if (!(v >= min && v <= max))  // nan fails too
      return std::unexpected("must be between " + number_text(min) + " and " + number_text(max));
    return v;
  };
}

std::expected<std::optional<double>, std::string> read_opt_gib(const toml::node& n) {
  auto v = number_in(0, 1e6)(n);
  if (!v) return std::unexpected(v.error());
  return std::optional<double>(*v);
}

std::expected<Action, std::string> read_action(const toml::node& n) {
  auto a = n.is_string() ? parse_action(*n.value<std::string>()) : std::nullopt;
  if (!a) return std::unexpected(std::string("must be one of none, warn, drain, reboot"));
  return *a;
}

std::expected<std::vector<std::string>, std::string> read_names(const toml::node& n) {
  const auto* arr = n.as_array();
  if (arr == nullptr) return std::unexpected(std::string("must be an array of strings"));
  std::vector<std::string> out;
  for (const auto& item : *arr) {
    if (!item.is_string() || item.value<std::string>()->empty())
      return std::unexpected(std::string("must be an array of non-empty strings"));
    out.push_back(*item.value<std::string>());
  }
  return out;
}

// [checks.efa.counter_thresholds]: counter name = the rise within the window above which it counts.
std::expected<std::map<std::string, std::uint64_t>, std::string> read_thresholds(const toml::node& n) {
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


// [[checks.kernel_log.rule]] tables: each with code, pattern, action and an optional message.
std::expected<std::vector<KernelLogRule>, std::string> read_rules(const toml::node& n, const std::string& source) {
  const std::string not_tables = ": key 'rule' in [checks.kernel_log] must be an array of tables ([[checks.kernel_log.rule]])";
  const auto* arr = n.as_array();
  if (arr == nullptr) return std::unexpected(where(source, n.source()) + not_tables);
  std::vector<KernelLogRule> rules;
  for (const auto& item : *arr) {
    const auto* t = item.as_table();
    if (t == nullptr) return std::unexpected(where(source, item.source()) + not_tables);
    KernelLogRule rule;
    for (const auto& [k, v] : *t) {
      std::string key(k.str());
      auto fail = [&](const std::string& what) {
        return std::unexpected(where(source, k.source()) + ": key '" + key + "' in [[checks.kernel_log.rule]] " + what);
      };
      if (key == "code" || key == "pattern" || key == "message") {
        if (!v.is_string()) return fail("must be a string");
        std::string s = *v.value<std::string>();
        (key == "code" ? rule.code : key == "pattern" ? rule.pattern : rule.message) = s;
      } else if (key == "action") {
        auto a = v.is_string() ? parse_action(*v.value<std::string>()) : std::nullopt;
        if (!a) return fail("must be one of none, warn, drain, reboot");
        rule.action = *a;
      } else {
        return std::unexpected(where(source, k.source()) + ": unknown key '" + key +
                               "' in [[checks.kernel_log.rule]] (known: action, code, message, pattern)");
      }
    }
    if (rule.code.empty() || rule.pattern.empty())
      return std::unexpected(where(source, item.source()) + ": a [[checks.kernel_log.rule]] needs code and pattern");
    // Compiled as the matcher compiles it (RE2: no backreferences, no lookarounds).
    if (auto error = kernel_log_pattern_error(rule.pattern))
      return std::unexpected(where(source, item.source()) + ": rule " + rule.code + ": pattern is not a valid regex (RE2): " + *error);
    rules.push_back(rule);
  }
  return rules;
}

// [[checks.gpu.xid]] tables: xid, action, and optionally count, window_s, description.
std::expected<std::map<unsigned, XidRule>, std::string> read_xid_rules(const toml::node& n, const std::string& source) {
  const auto* arr = n.as_array();
  const std::string what = "must be an array of tables ([[checks.gpu.xid]])";
  if (arr == nullptr) return std::unexpected(what);
  std::map<unsigned, XidRule> rules;
  for (const auto& item : *arr) {
    const auto* t = item.as_table();
    if (t == nullptr) return std::unexpected(what);
    std::optional<unsigned> xid;
    XidRule rule;
    bool has_action = false;
    for (const auto& [k, v] : *t) {
      std::string key(k.str());
      auto fail = [&](const std::string& why) {
        return std::unexpected(where(source, v.source()) + ": key '" + key + "' in [[checks.gpu.xid]] " + why);
      };
      if (key == "xid" || key == "count" || key == "window_s") {
        if (!v.is_integer()) return fail("must be an integer");
        auto x = *v.value<std::int64_t>();
        if (key == "xid") {
          if (x < 1 || x > 100000) return fail("must be between 1 and 100000");
          xid = static_cast<unsigned>(x);
        } else if (key == "count") {
          if (x < 1 || x > 100000) return fail("must be between 1 and 100000");
          rule.count = static_cast<unsigned>(x);
        } else {
          if (x < 0 || x > 30L * 24 * 3600) return fail("must be between 0 and 2592000");
          rule.window = std::chrono::seconds(x);
        }
      } else if (key == "action") {
        auto a = v.is_string() ? parse_xid_action(*v.value<std::string>()) : std::nullopt;
        if (!a) return fail("must be one of ignore, warn, restart_app, reset_gpu, drain, reboot");
        rule.action = *a;
        has_action = true;
      } else if (key == "description") {
        if (!v.is_string()) return fail("must be a string");
        rule.description = *v.value<std::string>();
      } else {
        return std::unexpected(where(source, k.source()) + ": unknown key '" + key +
                               "' in [[checks.gpu.xid]] (known: action, count, description, window_s, xid)");
      }
    }
    if (!xid || !has_action)
      return std::unexpected(where(source, item.source()) + ": a [[checks.gpu.xid]] needs xid and action");
    if (rule.count > 1 && rule.window.count() == 0)
      return std::unexpected(where(source, item.source()) + ": XID " + std::to_string(*xid) +
                             ": a count above 1 needs window_s");
    if (rule.description.empty()) rule.description = XidPolicy::defaults().rule_for(*xid).description;
    rules[*xid] = rule;
  }
  return rules;
}

// A member of the GPU thresholds, through Config::gpu.
template <typename T>
Reader gpu_threshold(T GpuThresholds::*member, std::function<std::expected<T, std::string>(const toml::node&)> read) {
  return [=](const toml::node& n, Config& c) -> std::expected<void, std::string> {
    auto v = read(n);
    if (!v) return std::unexpected(v.error());
    c.gpu.thresholds.*member = *v;
    return {};
  };
}

std::function<std::expected<std::uint64_t, std::string>(const toml::node&)> u64_in(std::int64_t min, std::int64_t max) {
  return [=](const toml::node& n) -> std::expected<std::uint64_t, std::string> {
    auto v = uint_in(min, max)(n);
    if (!v) return std::unexpected(v.error());
    return std::uint64_t{*v};
  };
}

std::expected<double, std::string> read_non_negative(const toml::node& n) {
  double v = n.is_floating_point() ? *n.value<double>() : n.is_integer() ? static_cast<double>(*n.value<std::int64_t>()) : -1;
  if (!(n.is_floating_point() || n.is_integer()) || !std::isfinite(v) || v < 0)
    return std::unexpected(std::string("must be a finite number >= 0"));
  return v;
}


// Signals a job may be asked to checkpoint with (scancel --signal names them without "SIG").
std::expected<std::string, std::string> read_signal(const toml::node& n) {
  static const std::vector<std::string> names = {"USR1", "USR2", "TERM", "INT", "HUP", "QUIT", "CONT", "URG", "ALRM"};
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (std::find(names.begin(), names.end(), v) == names.end())
    return std::unexpected(std::string("must be one of USR1, USR2, TERM, INT, HUP, QUIT, CONT, URG, ALRM"));
  return v;
}

std::expected<RequeuePriority, std::string> read_requeue_priority(const toml::node& n) {
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (v == "top") return RequeuePriority::top;
  if (v == "keep") return RequeuePriority::keep;
  return std::unexpected(std::string("must be \"top\" (a requeued job starts before other pending jobs) or \"keep\""));
}

std::expected<std::string, std::string> read_url(const toml::node& n) {
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0)
    return std::unexpected(std::string("must be an http:// or https:// URL"));
  while (!v.empty() && v.back() == '/') v.pop_back();
  return v;
}

// An array of tables ([[what]]): `key` reads one key into an item (false: unknown key), `finish`
// checks a whole item. Errors name the file position, the key and the table.
template <typename T>
std::expected<std::vector<T>, std::string> read_table_array(
    const toml::node& n, const std::string& what, const std::string& source, const std::string& known,
    const std::function<std::expected<bool, std::string>(T&, const std::string&, const toml::node&)>& key,
    const std::function<std::expected<void, std::string>(const T&)>& finish) {
  const auto* arr = n.as_array();
  if (arr == nullptr || !arr->is_array_of_tables())
    return std::unexpected(where(source, n.source()) + ": " + what + " must be an array of tables ([[" + what + "]])");
  std::vector<T> items;
  for (const auto& item : *arr) {
    T t;
    for (const auto& [k, v] : *item.as_table()) {
      std::string name(k.str());
      auto r = key(t, name, v);
      if (!r) return std::unexpected(where(source, v.source()) + ": key '" + name + "' in [[" + what + "]] " + r.error());
      if (!*r)
        return std::unexpected(where(source, k.source()) + ": unknown key '" + name + "' in [[" + what + "]] (known: " +
                               known + ")");
    }
    if (auto r = finish(t); !r) return std::unexpected(where(source, item.source()) + ": [[" + what + "]] " + r.error());
    items.push_back(std::move(t));
  }
  return items;
}

// Assigns the value `read` gives, or passes its error on.
template <typename T, typename R>
std::expected<bool, std::string> assign(T& to, R read) {
  if (!read) return std::unexpected(read.error());
  to = *read;
  return true;
}

// A directory below a mount, as plain names ("healthd/probe"): the probe walks it name by name
// without following links, so there is nothing to resolve ("..", ".", "//", a leading "/").
std::expected<std::filesystem::path, std::string> read_probe_dir(const toml::node& n) {
  const std::string what = "must be a relative path of plain names below the mount (\"healthd\", \"a/b\")";
  if (!n.is_string()) return std::unexpected(what);
  const auto text = *n.value<std::string>();
  if (text.empty() || text.find('\0') != std::string::npos) return std::unexpected(what);
  std::filesystem::path dir;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find('/', start), text.size());
    const auto name = text.substr(start, end - start);
    if (name.empty() || name == "." || name == "..") return std::unexpected(what);
    dir /= name;
    start = end + 1;
  }
  return dir;
}

std::expected<std::vector<StorageMountConfig>, std::string> read_mounts(const toml::node& n, const std::string& source) {
  using std::chrono::seconds;
  return read_table_array<StorageMountConfig>(
      n, "checks.storage.mount", source,
      "action, fstype, min_free_gib, min_free_inodes_percent, min_free_percent, path, probe, probe_dir",
      [](StorageMountConfig& m, const std::string& k, const toml::node& v) -> std::expected<bool, std::string> {
        if (k == "path") return assign(m.path, read_abs_path(v));
        if (k == "fstype") return assign(m.fstype, read_string(v));
        if (k == "min_free_gib") return assign(m.min_free_gib, read_non_negative(v));
        if (k == "min_free_percent") return assign(m.min_free_percent, read_non_negative(v));
        if (k == "min_free_inodes_percent") return assign(m.min_free_inodes_percent, read_non_negative(v));
        if (k == "probe") return assign(m.probe, read_bool(v));
        if (k == "probe_dir") return assign(m.probe_dir, read_probe_dir(v));
        if (k == "action") return assign(m.action, read_action(v));
        return false;
      },
      [](const StorageMountConfig& m) -> std::expected<void, std::string> {
        if (m.path.empty()) return std::unexpected(std::string("needs a path"));
        if (m.min_free_percent > 100 || m.min_free_inodes_percent > 100)
          return std::unexpected(std::string("percentages must be between 0 and 100"));
        return {};
      });
}

std::expected<std::vector<ScriptConfig>, std::string> read_scripts(const toml::node& n, const std::string& source) {
  using std::chrono::seconds;
  return read_table_array<ScriptConfig>(
      n, "checks.script", source, "action, command, interval_s, name, timeout_s",
      [](ScriptConfig& s, const std::string& k, const toml::node& v) -> std::expected<bool, std::string> {
        if (k == "name") return assign(s.name, read_string(v));
        if (k == "timeout_s") return assign(s.timeout, duration_in<seconds>(1, 3600, "seconds")(v));
        if (k == "interval_s") return assign(s.interval, duration_in<seconds>(1, 7 * 24 * 3600, "seconds")(v));
        if (k == "action") return assign(s.action, read_action(v));
        if (k == "command") {
          const auto* a = v.as_array();
          if (a == nullptr || a->empty() || !a->is_homogeneous(toml::node_type::string))
            return std::unexpected(std::string("must be a non-empty array of strings (argv, no shell)"));
          s.command.clear();
          for (const auto& e : *a) {
            auto word = *e.value<std::string>();
            if (word.find('\0') != std::string::npos) return std::unexpected(std::string("must not contain a NUL byte"));
            s.command.push_back(word);
          }
          if (auto program = read_program(a->front()); !program)
            return std::unexpected("first word " + program.error());
          return true;
        }
        return false;
      },
      [](const ScriptConfig& s) -> std::expected<void, std::string> {
        if (s.name.empty() || s.command.empty()) return std::unexpected(std::string("needs name and command"));
        return {};
      });
}

using Table = std::map<std::string, Reader>;

const std::map<std::string, Table>& schema() {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  static const std::map<std::string, Table> s = {
      {"daemon",
       {
           {"node_name",
            [](const toml::node& n, Config& c) -> std::expected<void, std::string> {
              if (!n.is_string()) return std::unexpected("must be a string");
              auto v = *n.value<std::string>();
              if (auto ok = check_node_name(v); !ok) return std::unexpected(ok.error());
              c.node_name = v;
              return {};
            }},
           {"socket", path_key(&Config::socket)},
           {"state_dir", path_key(&Config::state_dir)},
           {"host_root", path_key(&Config::host_root)},
           {"log_level",
            [](const toml::node& n, Config& c) -> std::expected<void, std::string> {
              if (!n.is_string()) return std::unexpected("must be a string");
              auto v = *n.value<std::string>();
              if (!is_valid_log_level(v)) return std::unexpected("must be one of trace, debug, info, warn, error");
              c.log_level = v;
              return {};
            }},
           {"ended_job_retention_s", seconds_key(&Config::ended_job_retention, 0, 30L * 24 * 3600)},
           {"instance_type", string_key(&Config::instance_type)},
           {"profile_dir", path_key(&Config::profile_dir)},
           {"child_env", [](const toml::node& n, Config& c) -> std::expected<void, std::string> {
              auto v = read_env_names(n);
              if (!v) return std::unexpected(v.error());
              c.child_env = *v;
              return {};
            }},
       }},
      {"policy",
       {
           {"max_resumes", nested(&Config::policy, &PolicyConfig::max_resumes, uint_in(0, 1000))},
           {"resume_on_any_failure",
            nested<PolicyConfig, bool>(&Config::policy, &PolicyConfig::resume_on_any_failure, read_bool)},
           {"recovery_passes", nested(&Config::policy, &PolicyConfig::recovery_passes, uint_in(1, 1000))},
           {"flap_max_faults", nested(&Config::policy, &PolicyConfig::flap_max_faults, uint_in(1, 1000))},
           {"flap_window_s", nested(&Config::policy, &PolicyConfig::flap_window, duration_in<seconds>(1, 30L * 24 * 3600, "seconds"))},
           {"max_drained_share", nested<PolicyConfig, double>(&Config::policy, &PolicyConfig::max_drained_share, read_share)},
           {"check_interval_s", nested(&Config::policy, &PolicyConfig::check_interval, duration_in<seconds>(1, 24 * 3600, "seconds"))},
           {"check_deadline_s", nested(&Config::policy, &PolicyConfig::check_deadline, duration_in<seconds>(1, 3600, "seconds"))},
           {"requeue_priority",
            nested<PolicyConfig, RequeuePriority>(&Config::policy, &PolicyConfig::requeue_priority, read_requeue_priority)},
       }},
      {"slurm",
       {
           {"scontrol", nested<SlurmConfig, std::string>(&Config::slurm, &SlurmConfig::scontrol, read_program)},
           {"timeout_s", nested(&Config::slurm, &SlurmConfig::timeout, duration_in<seconds>(1, 600, "seconds"))},
           {"user", nested<SlurmConfig, std::string>(&Config::slurm, &SlurmConfig::user, read_string)},
       }},
      {"server",
       {
           {"max_connections", nested(&Config::server, &ServerLimits::max_connections, uint_in(16, 1000000))},
           {"root_reserved", nested(&Config::server, &ServerLimits::root_reserved, uint_in(1, 1000000))},
           {"max_connections_per_uid", nested(&Config::server, &ServerLimits::max_connections_per_uid, uint_in(1, 1000000))},
           {"idle_timeout_ms", nested(&Config::server, &ServerLimits::idle_timeout, duration_in<milliseconds>(100, 3600000, "milliseconds"))},
           {"message_timeout_ms", nested(&Config::server, &ServerLimits::message_timeout, duration_in<milliseconds>(100, 3600000, "milliseconds"))},
           {"write_timeout_ms", nested(&Config::server, &ServerLimits::write_timeout, duration_in<milliseconds>(100, 3600000, "milliseconds"))},
       }},
      {"checks.kernel_log",
       {
           {"enabled", nested<KernelLogConfig, bool>(&Config::kernel_log, &KernelLogConfig::enabled, read_bool)},
           {"path", nested<KernelLogConfig, std::filesystem::path>(&Config::kernel_log, &KernelLogConfig::path, read_abs_path)},
           {"poll_interval_ms", nested(&Config::kernel_log, &KernelLogConfig::poll_interval, duration_in<milliseconds>(10, 60000, "milliseconds"))},
           {"hold_s", nested(&Config::kernel_log, &KernelLogConfig::hold, duration_in<seconds>(1, 30L * 24 * 3600, "seconds"))},
           {"default_rules", nested<KernelLogConfig, bool>(&Config::kernel_log, &KernelLogConfig::default_rules, read_bool)},
           // "rule" is read separately: it needs the source name for its own error positions.
           {"rule", nullptr},
       }},
      {"checks.gpu",
       {
           {"enabled", nested<GpuConfig, bool>(&Config::gpu, &GpuConfig::enabled, read_bool)},
           {"library", nested<GpuConfig, std::string>(&Config::gpu, &GpuConfig::library, read_text)},
           {"deadline_ms", nested(&Config::gpu, &GpuConfig::deadline, duration_in<milliseconds>(100, 600000, "milliseconds"))},
           {"events", nested<GpuConfig, bool>(&Config::gpu, &GpuConfig::events, read_bool)},
           {"expected_count", gpu_threshold<std::uint32_t>(&GpuThresholds::expected_count, uint_in(0, 64))},
           {"required", gpu_threshold<bool>(&GpuThresholds::required, read_bool)},
           {"ecc_uncorrected_max", gpu_threshold<std::uint64_t>(&GpuThresholds::ecc_uncorrected_max, u64_in(0, 1000000))},
           {"retired_pages_max", gpu_threshold<std::uint32_t>(&GpuThresholds::retired_pages_max, uint_in(0, 100000))},
           {"memory_action", gpu_threshold<Action>(&GpuThresholds::memory_action, read_action)},
           {"clock_slowdown_action", gpu_threshold<Action>(&GpuThresholds::clock_slowdown_action, read_action)},
           {"pcie_width_action", gpu_threshold<Action>(&GpuThresholds::pcie_width_action, read_action)},
           {"pcie_gen_action", gpu_threshold<Action>(&GpuThresholds::pcie_gen_action, read_action)},
           {"nvlink_expected_links", gpu_threshold<std::uint32_t>(&GpuThresholds::nvlink_expected_links, uint_in(0, 18))},
           {"nvlink_down_action", gpu_threshold<Action>(&GpuThresholds::nvlink_down_action, read_action)},
           {"nvlink_error_rise_max", gpu_threshold<std::uint64_t>(&GpuThresholds::nvlink_error_rise_max, u64_in(0, 1000000000))},
           {"nvlink_error_action", gpu_threshold<Action>(&GpuThresholds::nvlink_error_action, read_action)},
           {"temperature_max_c", gpu_threshold<std::uint32_t>(&GpuThresholds::temperature_max_c, uint_in(30, 150))},
           {"temperature_action", gpu_threshold<Action>(&GpuThresholds::temperature_action, read_action)},
           {"persistence_required", gpu_threshold<bool>(&GpuThresholds::persistence_required, read_bool)},
           {"power_check", gpu_threshold<bool>(&GpuThresholds::power_check, read_bool)},
           {"xid_hold_s", nested(&Config::gpu, &GpuConfig::xid_hold, duration_in<seconds>(1, 30L * 24 * 3600, "seconds"))},
           {"xid_unknown_action",
            [](const toml::node& n, Config& c) -> std::expected<void, std::string> {
              auto a = n.is_string() ? parse_xid_action(*n.value<std::string>()) : std::nullopt;
              if (!a) return std::unexpected("must be one of ignore, warn, restart_app, reset_gpu, drain, reboot");
              c.gpu.xid_unknown = *a;
              return {};
            }},
           {"boot_id", nested<GpuConfig, std::filesystem::path>(&Config::gpu, &GpuConfig::boot_id, read_abs_path)},
           // "xid" is read separately, like the kernel-log rules.
           {"xid", nullptr},
       }},
      {"checks.dcgm",
       {
           {"enabled", nested<DcgmConfig, bool>(&Config::dcgm, &DcgmConfig::enabled, read_bool)},
           {"dcgmi", nested<DcgmConfig, std::string>(&Config::dcgm, &DcgmConfig::dcgmi, read_program)},
           {"level", nested(&Config::dcgm, &DcgmConfig::level, uint_in(1, 4))},
           {"timeout_s", nested(&Config::dcgm, &DcgmConfig::timeout, duration_in<seconds>(10, 4 * 3600, "seconds"))},
           {"interval_s", nested(&Config::dcgm, &DcgmConfig::interval, duration_in<seconds>(60, 30L * 24 * 3600, "seconds"))},
           {"action", nested<DcgmConfig, Action>(&Config::dcgm, &DcgmConfig::action, read_action)},
       }},
      {"checks.efa",
       {
           {"enabled", nested<EfaConfig, bool>(&Config::efa, &EfaConfig::enabled, read_bool)},
           {"expected_devices", nested(&Config::efa, &EfaConfig::expected_devices, opt_uint_in(0, 1024))},
           {"counter_window_s", nested(&Config::efa, &EfaConfig::counter_window, duration_in<seconds>(1, 24 * 3600, "seconds"))},
           {"counter_thresholds", nested<EfaConfig, std::map<std::string, std::uint64_t>>(&Config::efa, &EfaConfig::counter_thresholds, read_thresholds)},
           {"counter_action", nested<EfaConfig, Action>(&Config::efa, &EfaConfig::counter_action, read_action)},
       }},
      {"checks.neuron",
       {
           {"enabled", nested<NeuronConfig, bool>(&Config::neuron, &NeuronConfig::enabled, read_bool)},
           {"expected_devices", nested(&Config::neuron, &NeuronConfig::expected_devices, opt_uint_in(0, 1024))},
           {"max_uncorrected", nested<NeuronConfig, std::uint64_t>(&Config::neuron, &NeuronConfig::max_uncorrected,
                                                                   [](const toml::node& n) -> std::expected<std::uint64_t, std::string> {
                                                                     auto v = uint_in(0, 1000000)(n);
                                                                     if (!v) return std::unexpected(v.error());
                                                                     return *v;
                                                                   })},
           {"max_corrected", nested<NeuronConfig, std::optional<std::uint64_t>>(&Config::neuron, &NeuronConfig::max_corrected,
                                                                                [](const toml::node& n) -> std::expected<std::optional<std::uint64_t>, std::string> {
                                                                                  auto v = uint_in(0, 1000000000)(n);
                                                                                  if (!v) return std::unexpected(v.error());
                                                                                  return std::optional<std::uint64_t>(*v);
                                                                                })},
           {"corrected_action", nested<NeuronConfig, Action>(&Config::neuron, &NeuronConfig::corrected_action, read_action)},
           {"unhealthy_action", nested<NeuronConfig, Action>(&Config::neuron, &NeuronConfig::unhealthy_action, read_action)},
           {"heartbeat_stall_s", nested(&Config::neuron, &NeuronConfig::heartbeat_stall, duration_in<seconds>(0, 24 * 3600, "seconds"))},
       }},
      {"checks.node",
       {
           {"enabled", nested<NodeConfig, bool>(&Config::node, &NodeConfig::enabled, read_bool)},
           {"expected_cpus", nested(&Config::node, &NodeConfig::expected_cpus, opt_uint_in(1, 100000))},
           {"min_memory_gib", nested<NodeConfig, std::optional<double>>(&Config::node, &NodeConfig::min_memory_gib, read_opt_gib)},
           {"memory_slack_pct", nested<NodeConfig, double>(&Config::node, &NodeConfig::memory_slack_pct, number_in(0, 50))},
           {"min_shm_gib", nested<NodeConfig, double>(&Config::node, &NodeConfig::min_shm_gib, number_in(0, 1e6))},
           {"clock_action", nested<NodeConfig, Action>(&Config::node, &NodeConfig::clock_action, read_action)},
           {"required_processes", nested<NodeConfig, std::vector<std::string>>(&Config::node, &NodeConfig::required_processes, read_names)},
       }},
      {"checks.storage",
       {
           {"interval_s", nested(&Config::storage, &StorageConfig::interval, duration_in<seconds>(1, 24 * 3600, "seconds"))},
           {"probe_timeout_s", nested(&Config::storage, &StorageConfig::probe_timeout, duration_in<seconds>(1, 600, "seconds"))},
           {"mount", nullptr},  // [[checks.storage.mount]], read separately like the kernel-log rules
       }},
      {"checks.ec2",
       {
           {"enabled", nested<Ec2Config, bool>(&Config::ec2, &Ec2Config::enabled, read_bool)},
           {"endpoint", nested<Ec2Config, std::string>(&Config::ec2, &Ec2Config::endpoint, read_url)},
           {"interval_s", nested(&Config::ec2, &Ec2Config::interval, duration_in<seconds>(1, 3600, "seconds"))},
           {"timeout_ms", nested(&Config::ec2, &Ec2Config::timeout, duration_in<milliseconds>(10, 10000, "milliseconds"))},
           {"action", nested<Ec2Config, Action>(&Config::ec2, &Ec2Config::action, read_action)},
           {"checkpoint_signal", nested<Ec2Config, std::string>(&Config::ec2, &Ec2Config::checkpoint_signal, read_signal)},
           {"checkpoint_grace_s", nested(&Config::ec2, &Ec2Config::checkpoint_grace, duration_in<seconds>(0, 3600, "seconds"))},
       }},
  };
  return s;
}

std::string known_keys(const Table& table) {
  std::string out;
  for (const auto& [k, _] : table) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path) {
  if (root.empty() || root == "/") return path;
  return root / path.relative_path();
}

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

namespace {

std::expected<toml::table, std::string> parse_toml(std::string_view text, const std::string& source_name) {
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    return std::unexpected(where(source_name, e.source()) + ": " + std::string(e.description()));
  }
}

// Where `path` ("slurm.scontrol") is in the file, or the file alone for a key left at its default.
std::string where_key(const toml::table& root, const std::string& path, const std::string& source) {
  auto node = root.at_path(path);
  return node ? where(source, node.node()->source()) : source;
}

// Program names become absolute paths in the children's fixed PATH, once, here: at run time no
// PATH is looked at. An absolute path is kept as it is (it may hold %n, expanded later).
std::expected<void, std::string> resolve_programs(Config& config, const toml::table& root, const std::string& source) {
  auto resolve = [&](std::string& program, const std::string& path, const std::string& key) -> std::expected<void, std::string> {
    if (program.empty() || program.front() == '/') return {};
    auto found = resolve_program(program);
    if (!found) return std::unexpected(where_key(root, path, source) + ": " + key + ": " + found.error());
    program = *found;
    return {};
  };
  if (auto r = resolve(config.slurm.scontrol, "slurm.scontrol", "key 'scontrol' in [slurm]"); !r) return r;
  if (config.dcgm.enabled)
    if (auto r = resolve(config.dcgm.dcgmi, "checks.dcgm.dcgmi", "key 'dcgmi' in [checks.dcgm]"); !r) return r;
  for (std::size_t i = 0; i < config.scripts.size(); ++i) {
    auto& script = config.scripts[i];
    if (script.command.empty()) continue;
    auto path = "checks.script[" + std::to_string(i) + "].command";
    if (auto r = resolve(script.command.front(), path, "[[checks.script]] '" + script.name + "' command"); !r) return r;
  }
  return {};
}

// A named profile must exist (in profile_dir or built in); "auto" is detected at start.
std::expected<void, std::string> check_profile(const Config& config, const toml::table& root, const std::string& source) {
  if (config.instance_type.empty() || config.instance_type == "auto") return {};
  auto profile = resolve_profile(config.instance_type, config.profile_dir);
  if (!profile && profile.error().rfind(config.profile_dir.string(), 0) == 0)
    return std::unexpected(profile.error());  // a profile file's own error, with its own position
  if (!profile)
    return std::unexpected(where_key(root, "daemon.instance_type", source) + ": key 'instance_type' in [daemon] " +
                           profile.error());
  return {};
}

std::expected<Config, std::string> read_config(const toml::table& root, const std::string& source_name) {
  Config config;
  // Walks a table whose dotted name is `section` against the schema; "checks" only groups sub-tables.
  std::function<std::expected<void, std::string>(const std::string&, const toml::key&, const toml::node&)> walk =
      [&](const std::string& section, const toml::key& section_key,
          const toml::node& section_node) -> std::expected<void, std::string> {
    const auto* table = section_node.as_table();
    if (section == "checks") {
      if (table == nullptr) return std::unexpected(where(source_name, section_node.source()) + ": [checks] must be a table");
      for (const auto& [key, value] : *table) {
        auto r = walk("checks." + std::string(key.str()), key, value);
        if (!r) return r;
      }
      return {};
    }
    if (section == "checks.script") {  // an array of tables, not a table
      auto scripts = read_scripts(section_node, source_name);
      if (!scripts) return std::unexpected(scripts.error());
      config.scripts = *scripts;
      return {};
    }
    auto known = schema().find(section);
    if (known == schema().end())
      return std::unexpected(where(source_name, section_key.source()) + ": unknown section [" + section + "]");
    if (table == nullptr)
      return std::unexpected(where(source_name, section_node.source()) + ": [" + section + "] must be a table");
    for (const auto& [key, value] : *table) {
      std::string name(key.str());
      auto reader = known->second.find(name);
      if (reader == known->second.end())
        return std::unexpected(where(source_name, key.source()) + ": unknown key '" + name + "' in [" + section +
                               "] (known: " + known_keys(known->second) + ")");
      if (section == "checks.kernel_log" && name == "rule") {
        auto rules = read_rules(value, source_name);
        if (!rules) return std::unexpected(rules.error());
        config.kernel_log.rules = *rules;
        continue;
      }
      if (section == "checks.gpu" && name == "xid") {
        auto rules = read_xid_rules(value, source_name);
        if (!rules) return std::unexpected(rules.error().find(source_name) == 0
                                               ? rules.error()
                                               : where(source_name, value.source()) + ": key 'xid' in [checks.gpu] " + rules.error());
        config.gpu.xid_rules = *rules;
        continue;
      }
      if (section == "checks.storage" && name == "mount") {
        auto mounts = read_mounts(value, source_name);
        if (!mounts) return std::unexpected(mounts.error());
        config.storage.mounts = *mounts;
        continue;
      }
      if (auto r = reader->second(value, config); !r)
        return std::unexpected(where(source_name, value.source()) + ": key '" + name + "' in [" + section + "] " +
                               r.error());
    }
    return {};
  };
  for (const auto& [section_key, section_node] : root) {
    if (auto r = walk(std::string(section_key.str()), section_key, section_node); !r) return std::unexpected(r.error());
  }
  if (config.server.root_reserved >= config.server.max_connections)
    return std::unexpected(source_name + ": [server] root_reserved (" + std::to_string(config.server.root_reserved) +
                           ") must be less than max_connections (" + std::to_string(config.server.max_connections) +
                           "), or users could never connect");
  if (config.node_name.empty()) config.node_name = default_node_name();
  return config;
}

}  // namespace

std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name) {
  auto root = parse_toml(text, source_name);
  if (!root) return std::unexpected(root.error());
  return read_config(*root, source_name);
}

std::expected<Config, std::string> load_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::unexpected(file.string() + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  const auto source = file.string();
  auto root = parse_toml(text.str(), source);
  if (!root) return std::unexpected(root.error());
  auto config = read_config(*root, source);
  if (!config) return config;
  if (auto r = resolve_programs(*config, *root, source); !r) return std::unexpected(r.error());
  if (auto r = check_profile(*config, *root, source); !r) return std::unexpected(r.error());
  return config;
}

}  // namespace ar::healthd
