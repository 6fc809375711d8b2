#include "script_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

const KeyTable<ScriptConfig>& keys() {
  static const auto keys =
      KeyTable<ScriptConfig>()
          .field("name", &ScriptConfig::name, read_string)
          .field("timeout_s", &ScriptConfig::timeout, seconds_in(1, 3600))
          .field("interval_s", &ScriptConfig::interval, seconds_in(1, 7 * 24 * 3600))
          .field("action", &ScriptConfig::action, read_node_remedy)
          .field_at("command", &ScriptConfig::command, &ScriptConfig::command_where, read_argv);
  return keys;
}

}  // namespace

void ScriptsConfig::expand_node(const std::string& node) {
  for (auto& script : scripts)
    for (auto& word : script.command) word = expand_node_name(word, node);
}

std::expected<void, std::string> ScriptsConfig::resolve_on_host() {
  for (auto& script : scripts)
    if (auto r = resolve_config_program(script.command.front(),
                                        script.command_where + ": [[checks.script]] '" + script.name + "' command");
        !r)
      return r;
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
          },
          [](const CheckSettings& settings) -> std::vector<std::pair<std::string, std::string>> {
            return {{"", table_array_text(static_cast<const ScriptsConfig&>(settings).scripts, keys())}};
          }};
}

}  // namespace ar::healthd
