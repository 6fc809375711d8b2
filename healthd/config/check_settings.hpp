// What the core config knows of a check's section: nothing but this interface. Each check reads its
// own [checks.NAME] table into its own settings (checks/NAME/NAME_config.{hpp,cpp}), with the toolkit
// of config/fields.hpp; the check registry (checks/registry.cpp) lists which sections exist. The core
// config (config.hpp) holds the settings opaquely, one per registered section, and hands each back
// to its check's factory when the daemon builds its checks.
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "config/instance_profile.hpp"

namespace ar::healthd {

class CheckSettings {
 public:
  virtual ~CheckSettings() = default;
  virtual std::unique_ptr<CheckSettings> clone() const = 0;
  // Fills the expectations the admin left unset from the instance profile (expected counts).
  virtual void apply_profile(const InstanceProfile&) {}
  // "%n" in the values that take it (an endpoint, a script's argv) becomes the node name.
  virtual void expand_node(const std::string& /*node*/) {}
  // Checks the settings against this host at load (program names resolved in the children's PATH);
  // the error names the file position of the offending key, remembered when the section was read.
  virtual std::expected<void, std::string> resolve_on_host() { return {}; }
};

// CRTP helper: clone() for a settings struct S.
template <class S>
class SettingsOf : public CheckSettings {
 public:
  std::unique_ptr<CheckSettings> clone() const override { return std::make_unique<S>(static_cast<const S&>(*this)); }
};

// How the core config reads [checks.NAME] (or [[checks.NAME]]): by the check's own reader. `node`
// is null when the file has no such section: the reader returns the defaults.
struct CheckSection {
  std::string name;
  std::function<std::expected<std::unique_ptr<CheckSettings>, std::string>(const toml::node* node, const std::string& source)>
      read;
  // Every key of the section with its value as TOML text (config_text), in the reader's order; a
  // key "" is the section itself ([[checks.script]], an array of tables).
  std::function<std::vector<std::pair<std::string, std::string>>(const CheckSettings&)> describe;
};

}  // namespace ar::healthd
