// The commented config shipped in packaging/ documents every key. Its examples (what follows a line
// "# Example", up to the next blank line) must be a config healthd accepts, so they cannot drift
// from the schema unnoticed; that its other "# key = value" lines are the defaults is
// config_tooling_test's SampleConfig.
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "config/config.hpp"
#include "checks/registry.hpp"
#include "checks/gpu/gpu_config.hpp"
#include "checks/dcgm/dcgm_config.hpp"

using namespace ar::healthd;

TEST(PackagedConfig, EveryExampleIsAcceptedByTheSchema) {
  std::ifstream in(std::string(AR_SOURCE_DIR) + "/packaging/healthd.toml");
  ASSERT_TRUE(in) << "packaging/healthd.toml not found";
  const std::regex commented_key(R"(^# ((\[\[?[a-z0-9_.]+(\."[^"]+")?\]\]?.*)|([a-z0-9_]+ = .*))$)");
  std::ostringstream text;
  int uncommented = 0;
  bool in_example = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# Example")) in_example = true;
    if (line.empty()) in_example = false;
    std::smatch m;
    if (in_example && std::regex_match(line, m, commented_key)) {
      text << m[1].str() << "\n";
      ++uncommented;
    } else {
      text << line << "\n";
    }
  }
  EXPECT_GT(uncommented, 30);
  auto c = parse_config(text.str(), "packaging/healthd.toml (uncommented)");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->section<GpuConfig>().xid_rules.at(92).count, 3u);
  EXPECT_EQ(c->policy.hooks.size(), 1u);
}
