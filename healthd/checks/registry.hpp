// The check registry: every kind of check healthd has, in one explicit list (registry.cpp), in the
// order their results are shown. An explicit list rather than static self-registration, which a
// static library drops without a word. Adding a check: ARCHITECTURE.md, "Add a check".
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check_kind.hpp"
#include "config/config.hpp"

namespace ar::healthd {

const std::vector<CheckKind>& check_kinds();
// Their config sections, for config/config.hpp.
const std::vector<CheckSection>& check_sections();
// The device lists the kinds keep (CheckKind::inventory), for the engine.
std::vector<DeviceInventory> device_inventories();

// The checks `config` asks for. Builds only: nothing starts (no thread, no watcher) before the
// daemon calls each check's start(); a config-check mode and the tests call this alone.
std::vector<std::shared_ptr<Check>> build_checks(const Config& config, BuildContext& context);

// load_config and parse_config (config/config.hpp) with the registry's sections.
std::expected<Config, std::string> load_config(const std::filesystem::path& file);
std::expected<Config, std::string> parse_config(std::string_view text, const std::string& source_name);
// describe_config (config/config.hpp) with the registry's sections.
std::vector<ConfigValue> describe_config(const Config& config);

}  // namespace ar::healthd
