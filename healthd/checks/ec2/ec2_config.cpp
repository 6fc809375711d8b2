#include "ec2_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
void Ec2Config::expand_node(const std::string& node) { endpoint = expand_node_name(endpoint, node); }

CheckSection ec2_section() {
  return check_section(KeyTable<Ec2Config>()
                           .field("enabled", &Ec2Config::enabled, read_bool)
                           .field("endpoint", &Ec2Config::endpoint, read_url)
                           .field("interval_s", &Ec2Config::interval, seconds_in(1, 3600))
                           .field("timeout_ms", &Ec2Config::timeout, millis_in(10, 10000))
                           .field("action", &Ec2Config::action, read_node_remedy)
                           .field("checkpoint_signal", &Ec2Config::checkpoint_signal,
                                  [](const toml::node& n) -> Parsed<std::string> {
                                    if (n.is_string() && n.value<std::string>()->empty()) return std::string();
                                    auto v = read_signal(n);
                                    if (!v) return std::unexpected(v.error() + ", or \"\" (none)");
                                    return v;
                                  })
                           .field("checkpoint_grace_s", &Ec2Config::checkpoint_grace, seconds_in(0, 3600)));
}

}  // namespace ar::healthd
