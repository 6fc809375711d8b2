// The commented config shipped in packaging/ documents every key with its default. With every
// commented key and table uncommented it must still be a config healthd accepts: the documentation
// cannot drift from the schema unnoticed.
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "config/config.hpp"
#include "checks/registry.hpp"
#include "checks/gpu/gpu_config.hpp"
#include "checks/dcgm/dcgm_config.hpp"

using namespace ar::healthd;

TEST(PackagedConfig, EveryDocumentedKeyIsAcceptedByTheSchema) {
  std::ifstream in(std::string(AR_SOURCE_DIR) + "/packaging/healthd.toml");
  ASSERT_TRUE(in) << "packaging/healthd.toml not found";
  const std::regex commented_key(R"(^# ((\[\[?[a-z_.]+(\."[^"]+")?\]\]?.*)|([a-z_]+ = .*))$)");
  std::ostringstream text;
  int uncommented = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, commented_key)) {
      text << m[1].str() << "\n";
      ++uncommented;
    } else {
      text << line << "\n";
    }
  }
  EXPECT_GT(uncommented, 80);
  auto c = parse_config(text.str(), "packaging/healthd.toml (uncommented)");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->section<GpuConfig>().xid_rules.at(92).count, 3u);
  EXPECT_EQ(c->section<DcgmConfig>().level, 1u);
}
