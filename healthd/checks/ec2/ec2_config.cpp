#include "ec2_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

const KeyTable<Ec2Config>& keys() {
  static const auto keys = KeyTable<Ec2Config>()
                               .field("enabled", &Ec2Config::enabled, read_bool)
                               .field("endpoint", &Ec2Config::endpoint, read_url)
                               .field("interval_s", &Ec2Config::interval, seconds_in(1, 3600))
                               .field("timeout_ms", &Ec2Config::timeout, millis_in(10, 10000))
                               .field("action", &Ec2Config::action, [](const toml::node& n) { return read_action(n); })
                               .field("checkpoint_signal", &Ec2Config::checkpoint_signal, read_signal)
                               .field("checkpoint_grace_s", &Ec2Config::checkpoint_grace, seconds_in(0, 3600));
  return keys;
}

}  // namespace

void Ec2Config::expand_node(const std::string& node) { endpoint = expand_node_name(endpoint, node); }

CheckSection ec2_section() {
  return {std::string(Ec2Config::kSection),
          [](const toml::node* node, const std::string& source) { return read_check_section(node, source, keys()); }};
}

}  // namespace ar::healthd
