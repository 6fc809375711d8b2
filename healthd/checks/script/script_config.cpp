#include "script_config.hpp"

#include "actions/process.hpp"
#include "config/fields.hpp"

namespace ar::healthd {
namespace {

const KeyTable<ScriptConfig>& keys() {
  static const auto keys =
      KeyTable<ScriptConfig>()
          .field("name", &ScriptConfig::name, read_string)
          .field("timeout_s", &ScriptConfig::timeout, seconds_in(1, 3600))
          .field("interval_s", &ScriptConfig::interval, seconds_in(1, 7 * 24 * 3600))
          .field("action", &ScriptConfig::action, [](const toml::node& n) { return read_action(n); })
          .nested("command", [](const toml::node& n, ScriptConfig& s, const std::string& source) -> Parsed<void> {
            auto argv = read_argv(n);
            if (!argv) return std::unexpected(where(source, n.source()) + ": key 'command' in [[checks.script]] " + argv.error());
            s.command = *argv;
            s.command_where = where(source, n.source());
            return {};
          });
  return keys;
}

}  // namespace

void ScriptsConfig::expand_node(const std::string& node) {
  for (auto& script : scripts)
    for (auto& word : script.command) word = expand_node_name(word, node);
}

std::expected<void, std::string> ScriptsConfig::resolve_on_host() {
  for (auto& script : scripts) {
    auto& program = script.command.front();
    if (program.front() == '/') continue;  // kept as it is (it may hold %n, expanded later)
    auto found = resolve_program(program);
    if (!found)
      return std::unexpected(script.command_where + ": [[checks.script]] '" + script.name + "' command: " + found.error());
    program = *found;
  }
  return {};
}

CheckSection script_section() {
  return {std::string(ScriptsConfig::kSection), [](const toml::node* node, const std::string& source)
              -> std::expected<std::unique_ptr<CheckSettings>, std::string> {
            auto s = std::make_unique<ScriptsConfig>();
            if (node == nullptr) return s;
            auto scripts = read_table_array<ScriptConfig>(*node, "checks.script", source, keys(), [](const ScriptConfig& one) -> Parsed<void> {
              if (one.name.empty() || one.command.empty()) return std::unexpected(std::string("[[checks.script]] needs name and command"));
              return {};
            });
            if (!scripts) return std::unexpected(scripts.error());
            s->scripts = *scripts;
            return s;
          }};
}

}  // namespace ar::healthd
