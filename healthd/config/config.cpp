#include "config.hpp"

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <unistd.h>

#include <toml++/toml.h>

namespace ar::healthd {
namespace {

std::string where(const std::string& source, const toml::source_region& r) {
  return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
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

const std::map<std::string, std::map<std::string, Reader>>& schema() {
  static const std::map<std::string, std::map<std::string, Reader>> s = {
      {"daemon",
       {
           {"node_name", string_key(&Config::node_name)},
           {"socket", path_key(&Config::socket)},
           {"state_dir", path_key(&Config::state_dir)},
           {"log_level",
            [](const toml::node& n, Config& c) -> std::expected<void, std::string> {
              if (!n.is_string()) return std::unexpected("must be a string");
              auto v = *n.value<std::string>();
              if (!is_valid_log_level(v)) return std::unexpected("must be one of trace, debug, info, warn, error");
              c.log_level = v;
              return {};
            }},
           {"ended_job_retention_s", seconds_key(&Config::ended_job_retention, 0, 30L * 24 * 3600)},
       }},
  };
  return s;
}

std::string known_keys(const std::map<std::string, Reader>& table) {
  std::string out;
  for (const auto& [k, _] : table) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

bool is_valid_log_level(const std::string& level) {
  return level == "trace" || level == "debug" || level == "info" || level == "warn" || level == "error";
}

std::string default_node_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  std::string name(buf);
  return name.substr(0, name.find('.'));
}

std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    return std::unexpected(where(source_name, e.source()) + ": " + std::string(e.description()));
  }
  Config config;
  for (const auto& [section_key, section_node] : root) {
    std::string section(section_key.str());
    auto known = schema().find(section);
    if (known == schema().end())
      return std::unexpected(where(source_name, section_key.source()) + ": unknown section [" + section + "]");
    const auto* table = section_node.as_table();
    if (table == nullptr)
      return std::unexpected(where(source_name, section_node.source()) + ": [" + section + "] must be a table");
    for (const auto& [key, value] : *table) {
      std::string name(key.str());
      auto reader = known->second.find(name);
      if (reader == known->second.end())
        return std::unexpected(where(source_name, key.source()) + ": unknown key '" + name + "' in [" + section +
                               "] (known: " + known_keys(known->second) + ")");
      if (auto r = reader->second(value, config); !r)
        return std::unexpected(where(source_name, value.source()) + ": key '" + name + "' in [" + section + "] " +
                               r.error());
    }
  }
  if (config.node_name.empty()) config.node_name = default_node_name();
  return config;
}

std::expected<Config, std::string> load_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::unexpected(file.string() + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), file.string());
}

}  // namespace ar::healthd
