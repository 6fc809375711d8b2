#include "fields.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/process.hpp"
#include "vocabulary/names.hpp"

namespace ar::healthd {

std::string where(const std::string& source, const toml::source_region& r) {
  return (r.path ? *r.path : source) + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

std::string toml_quote(const std::string& text) {
  // A TOML basic string: backslash, quote and control characters escaped, the rest as it is.
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string toml_key(const std::string& name) {
  const bool bare = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '_' || c == '-';
  });
  return bare ? name : toml_quote(name);
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

namespace {
// Levenshtein distance, for "did you mean"; names are short (keys, sections).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& known) {
  if (name.size() > 64) return {};  // a hostile or absurd key: no quadratic work on it
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, name.size() / 3) + 1;
  for (const auto& k : known) {
    auto d = edit_distance(name, k);
    if (d < best_distance) best_distance = d, best = k;
  }
  return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  auto close = closest_name(name, known);
  return close.empty() ? std::string() : "; did you mean '" + close + "'?";
}

Parsed<void> resolve_config_program(std::string& program, const std::string& what) {
  if (program.empty() || program.front() == '/') return {};
  auto found = resolve_program(program);
  if (!found) return std::unexpected(what + ": " + found.error());
  program = *found;
  return {};
}

std::string expand_node_name(std::string text, const std::string& node) {
  for (std::size_t pos = 0; (pos = text.find("%n", pos)) != std::string::npos; pos += node.size()) text.replace(pos, 2, node);
  return text;
}

Parsed<bool> read_bool(const toml::node& n) {
  if (!n.is_boolean()) return std::unexpected(std::string("must be true or false"));
  return *n.value<bool>();
}

Parsed<std::string> read_string(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  return *n.value<std::string>();
}

Parsed<std::string> read_text(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  auto v = *n.value<std::string>();
  if (v.empty()) return std::unexpected(std::string("must not be empty"));
  if (v.find('\0') != std::string::npos) return std::unexpected(std::string("must not contain a NUL byte"));
  return v;
}

Parsed<std::filesystem::path> read_abs_path(const toml::node& n) {
  if (!n.is_string()) return std::unexpected(std::string("must be a string"));
  std::filesystem::path p = *n.value<std::string>();
  if (!p.is_absolute()) return std::unexpected(std::string("must be an absolute path"));
  return p;
}

Parsed<std::string> read_program(const toml::node& n) {
  auto v = read_text(n);
  if (!v) return v;
  // Never a relative path, which would depend on the daemon's working directory.
  if (v->front() != '/' && v->find('/') != std::string::npos)
    return std::unexpected(std::string("must be an absolute path or a program name without '/'"));
  return v;
}

Parsed<std::string> read_url(const toml::node& n) {
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0)
    return std::unexpected(std::string("must be an http:// or https:// URL"));
  while (!v.empty() && v.back() == '/') v.pop_back();
  return v;
}

Parsed<std::string> read_signal(const toml::node& n) {
  static const std::vector<std::string> names = {"USR1", "USR2", "TERM", "INT", "HUP", "QUIT", "CONT", "URG", "ALRM"};
  auto v = n.is_string() ? *n.value<std::string>() : "";
  if (std::find(names.begin(), names.end(), v) == names.end())
    return std::unexpected(std::string("must be one of USR1, USR2, TERM, INT, HUP, QUIT, CONT, URG, ALRM"));
  return v;
}

Parsed<std::vector<std::string>> read_names(const toml::node& n) {
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

Parsed<std::vector<std::string>> read_argv(const toml::node& n) {
  const auto* a = n.as_array();
  if (a == nullptr || a->empty() || !a->is_homogeneous(toml::node_type::string))
    return std::unexpected(std::string("must be a non-empty array of strings (argv, no shell)"));
  std::vector<std::string> argv;
  for (const auto& e : *a) {
    auto word = *e.value<std::string>();
    if (word.find('\0') != std::string::npos) return std::unexpected(std::string("must not contain a NUL byte"));
    argv.push_back(word);
  }
  if (auto program = read_program(a->front()); !program) return std::unexpected("first word " + program.error());
  return argv;
}

Parsed<double> read_non_negative(const toml::node& n) {
  double v = n.is_floating_point() ? *n.value<double>() : n.is_integer() ? static_cast<double>(*n.value<std::int64_t>()) : -1;
  if (!(n.is_floating_point() || n.is_integer()) || !std::isfinite(v) || v < 0)
    return std::unexpected(std::string("must be a finite number >= 0"));
  return v;
}

Parsed<double> read_share(const toml::node& n) {
  double v = 0;
  if (n.is_floating_point()) v = *n.value<double>();
  else if (n.is_integer()) v = static_cast<double>(*n.value<std::int64_t>());
  else return std::unexpected(std::string("must be a number between 0 and 1"));
  // Written so that nan fails too: every comparison with nan is false.
  if (!(v >= 0 && v <= 1)) return std::unexpected(std::string("must be a number between 0 and 1"));
  return v;
}

namespace {
// A word of the vocabulary (vocabulary/names.hpp) by its name, one of `allowed`.
template <class E>
Parsed<E> read_one_of(const toml::node& n, std::span<const E> allowed, std::optional<E> (*parse)(const std::string&)) {
  auto v = n.is_string() ? parse(*n.value<std::string>()) : std::nullopt;
  if (!v || std::find(allowed.begin(), allowed.end(), *v) == allowed.end())
    return std::unexpected("must be one of " + names_of(allowed));
  return *v;
}
}  // namespace

Parsed<Remedy> read_remedy(const toml::node& n, std::span<const Remedy> allowed) { return read_one_of(n, allowed, parse_remedy); }

Parsed<Action> read_action(const toml::node& n, std::span<const Action> allowed) { return read_one_of(n, allowed, parse_action); }

namespace {
// An integer within [min, max], as T.
template <class T>
std::function<Parsed<T>(const toml::node&)> integer_in(std::int64_t min, std::int64_t max) {
  return [=](const toml::node& n) -> Parsed<T> {
    if (!n.is_integer()) return std::unexpected(std::string("must be an integer"));
    auto v = *n.value<std::int64_t>();
    if (v < min || v > max) return std::unexpected("must be between " + std::to_string(min) + " and " + std::to_string(max));
    return static_cast<T>(v);
  };
}

// The same reader, its value wrapped in an optional (a key that, once set, is judged).
template <class T>
std::function<Parsed<std::optional<T>>(const toml::node&)> optional_of(std::function<Parsed<T>(const toml::node&)> read) {
  return [read = std::move(read)](const toml::node& n) -> Parsed<std::optional<T>> {
    auto v = read(n);
    if (!v) return std::unexpected(v.error());
    return std::optional<T>(*v);
  };
}
}  // namespace

std::function<Parsed<std::uint32_t>(const toml::node&)> uint_in(std::int64_t min, std::int64_t max) {
  return integer_in<std::uint32_t>(min, max);
}
std::function<Parsed<std::uint64_t>(const toml::node&)> u64_in(std::int64_t min, std::int64_t max) {
  return integer_in<std::uint64_t>(min, max);
}
std::function<Parsed<std::optional<std::uint32_t>>(const toml::node&)> opt_uint_in(std::int64_t min, std::int64_t max) {
  return optional_of(uint_in(min, max));
}
std::function<Parsed<std::optional<std::uint64_t>>(const toml::node&)> opt_u64_in(std::int64_t min, std::int64_t max) {
  return optional_of(u64_in(min, max));
}

std::function<Parsed<double>(const toml::node&)> number_in(double min, double max) {
  return [=](const toml::node& n) -> Parsed<double> {
    if (!n.is_number()) return std::unexpected(std::string("must be a number"));
    double v = *n.value<double>();
    if (!(v >= min && v <= max))  // nan fails too
      return std::unexpected("must be between " + number_text(min) + " and " + number_text(max));
    return v;
  };
}

std::function<Parsed<std::optional<double>>(const toml::node&)> opt_number_in(double min, double max) {
  return optional_of(number_in(min, max));
}

}  // namespace ar::healthd
