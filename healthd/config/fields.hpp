// The toolkit every config section is read with: the core's ([daemon], [policy], [slurm], [server])
// and each check's own ([checks.NAME], read by the check: checks/*/..._config.cpp). One reader per
// value type, with the same rules and the same words everywhere, and a table of keys per section so
// an unknown key is an error naming the file, line, column and the known keys, with a "did you mean".
//
// Error messages read "<file>:<line>:<column>: key 'K' in [SECTION] <what>".
#pragma once

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <type_traits>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "vocabulary/action.hpp"
#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

template <class T>
using Parsed = std::expected<T, std::string>;

// "f.toml:3:7": the file the node was read from (a drop-in's own name), else `source`.
std::string where(const std::string& source, const toml::source_region& r);
// A number as an admin writes it (1000000, 0.5), for error messages.
std::string number_text(double v);
// The known name closest to `name` (a typo: at most a third of its letters off), or "".
std::string closest_name(const std::string& name, const std::vector<std::string>& known);
// "; did you mean 'x'?" or "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

// A program the config names, made an absolute path in the children's fixed PATH once, at load (at
// run time no PATH is looked at); an absolute path is kept as it is (it may hold %n). An empty
// name is left alone. The error reads "<what>: <why>".
Parsed<void> resolve_config_program(std::string& program, const std::string& what);

// "%n" in `text` becomes the node name, so one config serves several daemons on one host.
std::string expand_node_name(std::string text, const std::string& node);

// Value readers: the value, or what is wrong with it (without the position, added by the caller).
Parsed<bool> read_bool(const toml::node& n);
Parsed<std::string> read_string(const toml::node& n);
// A string that must say something: not empty, no NUL byte (cut off where it reaches C).
Parsed<std::string> read_text(const toml::node& n);
Parsed<std::filesystem::path> read_abs_path(const toml::node& n);
// A program: an absolute path, or a bare name resolved in the children's fixed PATH at load.
Parsed<std::string> read_program(const toml::node& n);
// An http:// or https:// URL, without a trailing '/'.
Parsed<std::string> read_url(const toml::node& n);
// A signal a job may be asked to checkpoint with, as scancel --signal names it ("USR1").
Parsed<std::string> read_signal(const toml::node& n);
// An array of non-empty strings.
Parsed<std::vector<std::string>> read_names(const toml::node& n);
// An argv: a non-empty array of strings without NUL bytes; the first word a program (see above).
Parsed<std::vector<std::string>> read_argv(const toml::node& n);
Parsed<double> read_non_negative(const toml::node& n);
Parsed<double> read_share(const toml::node& n);  // 0..1
// What a finding calls for, one of `allowed` by name (kNodeRemedies: none, warn, notify_only, drain, reboot).
Parsed<Remedy> read_remedy(const toml::node& n, std::span<const Remedy> allowed = kNodeRemedies);
// read_remedy with the node's remedies, as a reader a KeyTable field takes.
inline Parsed<Remedy> read_node_remedy(const toml::node& n) { return read_remedy(n); }
// One of the actions healthd carries out in `allowed`, by name (a hook's `on`, a cure chain's steps).
Parsed<Action> read_action(const toml::node& n, std::span<const Action> allowed);

using ValueReader = std::function<Parsed<void>(const toml::node&)>;
std::function<Parsed<std::uint32_t>(const toml::node&)> uint_in(std::int64_t min, std::int64_t max);
std::function<Parsed<std::uint64_t>(const toml::node&)> u64_in(std::int64_t min, std::int64_t max);
std::function<Parsed<std::optional<std::uint32_t>>(const toml::node&)> opt_uint_in(std::int64_t min, std::int64_t max);
std::function<Parsed<std::optional<std::uint64_t>>(const toml::node&)> opt_u64_in(std::int64_t min, std::int64_t max);
std::function<Parsed<double>(const toml::node&)> number_in(double min, double max);
std::function<Parsed<std::optional<double>>(const toml::node&)> opt_number_in(double min, double max);

template <typename D>
std::function<Parsed<D>(const toml::node&)> duration_in(std::int64_t min, std::int64_t max, const char* unit) {
  return [=](const toml::node& n) -> Parsed<D> {
    if (!n.is_integer()) return std::unexpected(std::string("must be an integer (") + unit + ")");
    auto v = *n.value<std::int64_t>();
    if (v < min || v > max) return std::unexpected("must be between " + std::to_string(min) + " and " + std::to_string(max));
    return D(v);
  };
}
inline auto seconds_in(std::int64_t min, std::int64_t max) { return duration_in<std::chrono::seconds>(min, max, "seconds"); }
inline auto millis_in(std::int64_t min, std::int64_t max) {
  return duration_in<std::chrono::milliseconds>(min, max, "milliseconds");
}

// A setting's value as TOML writes it (`"drain"`, `30`, `["a", "b"]`), for `healthd --check-config`
// and to tell at reload which sections changed. A duration is its count in the key's unit; an unset
// optional is kUnset, which is not TOML (the printer comments such a key out).
inline constexpr const char* kUnset = "(unset)";
std::string toml_quote(const std::string& text);
inline std::string config_text(bool v) { return v ? "true" : "false"; }
inline std::string config_text(const std::string& v) { return toml_quote(v); }
inline std::string config_text(const std::filesystem::path& v) { return toml_quote(v.string()); }
inline std::string config_text(double v) { return number_text(v); }
inline std::string config_text(Action a) { return toml_quote(to_string(a)); }
inline std::string config_text(Remedy r) { return toml_quote(to_string(r)); }
template <std::integral T>
  requires(!std::same_as<T, bool>)
std::string config_text(T v) {
  return std::to_string(v);
}
template <class R, class P>
std::string config_text(std::chrono::duration<R, P> d) {
  return std::to_string(d.count());
}
template <class T>
std::string config_text(const std::optional<T>& v) {
  return v ? config_text(*v) : std::string(kUnset);
}
// A key as TOML writes it: bare when it can be, else quoted.
std::string toml_key(const std::string& name);
template <class T>
std::string config_text(const std::map<std::string, T>& table) {
  std::string out;
  for (const auto& [key, value] : table) out += (out.empty() ? "" : ", ") + toml_key(key) + " = " + config_text(value);
  return "{" + out + "}";
}
template <class T>
std::string config_text(const std::vector<T>& items) {
  std::string out = "[";
  for (const auto& item : items) out += (out.size() > 1 ? ", " : "") + config_text(item);
  return out + "]";
}

// The keys of one section, read into a settings struct S. A field's error is a short "what"
// (positioned and named by the table); a nested reader's (an array of tables with positions of its
// own) is passed on whole.
template <class S>
class KeyTable {
 public:
  using Field = std::function<Parsed<void>(const toml::node&, S&)>;
  using Nested = std::function<Parsed<void>(const toml::node&, S&, const std::string& source)>;
  // A key's value in `s` as TOML text (see config_text).
  using Show = std::function<std::string(const S&)>;

  // `read` returns Parsed<T> for a member of type T.
  template <class T, class R>
  KeyTable& field(std::string key, T S::*member, R reader) {
    return field(std::move(key), member, std::move(reader), [](const T& v) { return config_text(v); });
  }
  // The same with the value shown by `shown_as` (a name the reader takes that config_text does not give).
  template <class T, class R, class W>
  KeyTable& field(std::string key, T S::*member, R reader, W shown_as) {
    return custom(
        std::move(key),
        [member, reader](const toml::node& n, S& s) -> Parsed<void> {
          auto v = reader(n);
          if (!v) return std::unexpected(v.error());
          s.*member = std::move(*v);
          return {};
        },
        [member, shown_as](const S& s) { return shown_as(s.*member); });
  }
  // A member of a member (the GPU thresholds inside GpuConfig).
  template <class O, class T, class R>
  KeyTable& field_in(std::string key, O S::*outer, T O::*member, R reader) {
    return custom(
        std::move(key),
        [outer, member, reader](const toml::node& n, S& s) -> Parsed<void> {
          auto v = reader(n);
          if (!v) return std::unexpected(v.error());
          (s.*outer).*member = std::move(*v);
          return {};
        },
        [outer, member](const S& s) { return config_text((s.*outer).*member); });
  }
  // A field whose "file:line:column" is kept in `at`, for an error found after reading (at load: a
  // program not found in the children's PATH).
  template <class T, class R>
  KeyTable& field_at(std::string key, T S::*member, std::string S::*at, R reader) {
    at_[key] = at;
    return field(std::move(key), member, std::move(reader));
  }
  // A key read by hand (a check across members), with how its value is shown.
  KeyTable& custom(std::string key, Field f, Show show) {
    order_.push_back(key);
    fields_[std::move(key)] = {std::move(f), std::move(show)};
    return *this;
  }
  // A value's error is positioned at its key rather than at the value ([[checks.kernel_log.rule]]
  // always said where the key is).
  KeyTable& errors_at_key() {
    errors_at_key_ = true;
    return *this;
  }
  // A key whose value has positions of its own ([[checks.kernel_log.rule]]).
  KeyTable& nested(std::string key, Nested f, Show show) {
    order_.push_back(key);
    nested_[std::move(key)] = {std::move(f), std::move(show)};
    return *this;
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out = order_;
    std::sort(out.begin(), out.end());
    return out;
  }

  // Every key of `s` with its value as TOML text, in the order the table lists them.
  std::vector<std::pair<std::string, std::string>> show(const S& s) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& key : order_) {
      if (auto f = fields_.find(key); f != fields_.end()) out.emplace_back(key, f->second.show(s));
      else out.emplace_back(key, nested_.at(key).show(s));
    }
    return out;
  }

  // Reads `node` (which must be a table) named `section` ("checks.efa") into `into`.
  Parsed<void> read(const toml::node& node, const std::string& section, const std::string& source, S& into) const {
    const auto* table = node.as_table();
    if (table == nullptr) return std::unexpected(where(source, node.source()) + ": [" + section + "] must be a table");
    for (const auto& [key, value] : *table) {
      std::string name(key.str());
      if (auto f = fields_.find(name); f != fields_.end()) {
        if (auto r = f->second.read(value, into); !r)
          return std::unexpected(where(source, errors_at_key_ ? key.source() : value.source()) + ": key '" + name + "' in [" +
                                 section + "] " + r.error());
        if (auto at = at_.find(name); at != at_.end()) into.*(at->second) = where(source, value.source());
      } else if (auto n = nested_.find(name); n != nested_.end()) {
        if (auto r = n->second.read(value, into, source); !r) return r;
      } else {
        auto known = keys();
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        return std::unexpected(where(source, key.source()) + ": unknown key '" + name + "' in [" + section + "]" +
                               did_you_mean(name, known) + " (known: " + list + ")");
      }
    }
    return {};
  }

 private:
  struct FieldEntry {
    Field read;
    Show show;
  };
  struct NestedEntry {
    Nested read;
    Show show;
  };
  std::vector<std::string> order_;
  std::map<std::string, FieldEntry> fields_;
  std::map<std::string, NestedEntry> nested_;
  std::map<std::string, std::string S::*> at_;
  bool errors_at_key_ = false;
};

// Items of an array of tables as TOML text: `[{code = "X", action = "drain"}, ...]` (unset keys left out).
template <class T>
std::string table_array_text(const std::vector<T>& items, const KeyTable<T>& keys) {
  std::string out = "[";
  for (const auto& item : items) {
    std::string one;
    for (const auto& [key, value] : keys.show(item))
      if (value != kUnset) one += (one.empty() ? "" : ", ") + key + " = " + value;
    out += (out.size() > 1 ? ", {" : "{") + one + "}";
  }
  return out + "]";
}

// An array of tables ([[what]]), each item read with `table` and then checked whole by `finish`,
// whose error is positioned at the item. `named`: how the value is called when it is not an array of
// tables ("key 'rule' in [checks.kernel_log]"); empty: `what`. `empty_ok`: `rule = []` is no rules
// (toml++ does not count an empty array as one of tables).
template <class T>
Parsed<std::vector<T>> read_table_array(const toml::node& n, const std::string& what, const std::string& source,
                                        const KeyTable<T>& table, const std::function<Parsed<void>(const T&)>& finish,
                                        const std::string& named = {}, bool empty_ok = false) {
  const auto* arr = n.as_array();
  if (empty_ok && arr != nullptr && arr->empty()) return std::vector<T>{};
  if (arr == nullptr || !arr->is_array_of_tables())
    return std::unexpected(where(source, n.source()) + ": " + (named.empty() ? what : named) +
                           " must be an array of tables ([[" + what + "]])");
  std::vector<T> items;
  for (const auto& item : *arr) {
    T t;
    if (auto r = table.read(item, "[" + what + "]", source, t); !r) return std::unexpected(r.error());
    if (auto r = finish(t); !r) return std::unexpected(where(source, item.source()) + ": " + r.error());
    items.push_back(std::move(t));
  }
  return items;
}

}  // namespace ar::healthd

namespace ar::healthd {

// A check's reader for config/check_settings.hpp's CheckSection: its [checks.NAME] table (or the
// defaults where the file has none) read with `keys`, then checked whole by `finish`.
template <class S>
Parsed<std::unique_ptr<CheckSettings>> read_check_section(const toml::node* node, const std::string& source,
                                                          const KeyTable<S>& keys,
                                                          const std::function<Parsed<void>(S&, const std::string&)>& finish = {}) {
  auto s = std::make_unique<S>();
  const std::string section = "checks." + std::string(S::kSection);
  if (node != nullptr)
    if (auto r = keys.read(*node, section, source, *s); !r) return std::unexpected(r.error());
  if (finish)
    if (auto r = finish(*s, source); !r) return std::unexpected(r.error());
  return s;
}

// A check's CheckSection: its [checks.NAME] table read with `keys` (the section keeps them), then
// checked whole by `finish`.
template <class S>
CheckSection check_section(KeyTable<S> keys,
                           std::type_identity_t<std::function<Parsed<void>(S&, const std::string&)>> finish = {}) {
  auto table = std::make_shared<const KeyTable<S>>(std::move(keys));
  return {std::string(S::kSection),
          [table, finish](const toml::node* node, const std::string& source) {
            return read_check_section<S>(node, source, *table, finish);
          },
          [table](const CheckSettings& settings) { return table->show(static_cast<const S&>(settings)); }};
}

}  // namespace ar::healthd
