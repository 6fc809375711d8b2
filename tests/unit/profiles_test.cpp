#include <gtest/gtest.h>

#include "config/config.hpp"
#include "checks/registry.hpp"
#include "checks/gpu/gpu_config.hpp"
#include "checks/efa/efa_config.hpp"
#include "checks/neuron/neuron_config.hpp"
#include "checks/node/node_config.hpp"
#include "config/profiles.hpp"
#include "fake_tree.hpp"

using namespace ar::healthd;

TEST(Profiles, BuiltInTypesAreThereWithTheirCounts) {
  auto p5 = resolve_profile("p5.48xlarge", "/nonexistent");
  ASSERT_TRUE(p5) << p5.error().message;
  EXPECT_EQ(p5->gpus, 8u);
  EXPECT_EQ(p5->efa_devices, 32u);
  EXPECT_EQ(p5->nvlinks_per_gpu, 18u);
  EXPECT_EQ(resolve_profile("trn1.32xlarge", "/nonexistent")->neuron_devices, 16u);
  EXPECT_EQ(resolve_profile("p5en.48xlarge", "/nonexistent")->efa_devices, 16u);
  EXPECT_EQ(resolve_profile("g5.xlarge", "/nonexistent")->efa_devices, 0u);
  for (const char* name : {"p4d.24xlarge", "p5e.48xlarge", "g5.48xlarge", "g6.12xlarge", "trn1n.32xlarge", "trn2.48xlarge",
                           "inf2.48xlarge"})
    EXPECT_TRUE(resolve_profile(name, "/nonexistent")) << name;
  for (const auto& p : builtin_profiles()) EXPECT_FALSE(p.source.empty()) << p.name;
}

TEST(Profiles, UnknownAndAutoAreErrorsThatSaySo) {
  auto x = resolve_profile("p9.mega", "/nonexistent");
  ASSERT_FALSE(x);
  EXPECT_NE(x.error().message.find("unknown instance type 'p9.mega'"), std::string::npos) << x.error().message;
  auto a = resolve_profile("auto", "/nonexistent");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("metadata"), std::string::npos) << a.error().message;
}

TEST(Profiles, AdminFilesAddAndOverride) {
  ar::test::FakeTree t;
  t.write("/profiles/ours.toml", R"(
[profile."p5.48xlarge"]   # we attach 16 EFAs only
gpus = 8
efa_devices = 16
cpus = 192
memory_gib = 2048
source = "our launch template"

[profile."onprem-a100"]
gpus = 8
nvlinks_per_gpu = 12
)");
  t.write("/profiles/README", "not a profile file");
  auto p5 = resolve_profile("p5.48xlarge", t.root() / "profiles");
  ASSERT_TRUE(p5) << p5.error().message;
  EXPECT_EQ(p5->efa_devices, 16u);
  EXPECT_EQ(p5->source, "our launch template");
  auto ours = resolve_profile("onprem-a100", t.root() / "profiles");
  ASSERT_TRUE(ours) << ours.error().message;
  EXPECT_EQ(ours->nvlinks_per_gpu, 12u);
  EXPECT_EQ(ours->efa_devices, 0u);
}

TEST(Profiles, ABadProfileFileNamesFileLineAndKey) {
  auto bad = parse_profiles("[profile.\"x\"]\ngpus = 8\nefa = 4\n", "/etc/healthd/profiles.d/x.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("/etc/healthd/profiles.d/x.toml:3:"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("'efa'"), std::string::npos) << bad.error();
  auto neg = parse_profiles("[profile.\"x\"]\ngpus = -1\n", "f.toml");
  ASSERT_FALSE(neg);
  EXPECT_NE(neg.error().find("f.toml:2:"), std::string::npos) << neg.error();
  EXPECT_FALSE(parse_profiles("gpus = 8\n", "f.toml"));
}

TEST(Profiles, TheConfigsOwnCountsWinOverTheProfile) {
  auto c = parse_config("[checks.efa]\nexpected_devices = 4\n", "f.toml");
  ASSERT_TRUE(c) << c.error();
  apply_profile(*c, *resolve_profile("p5.48xlarge", "/nonexistent"));
  EXPECT_EQ(c->section<EfaConfig>().expected_devices, 4u);       // explicit
  EXPECT_EQ(c->section<NeuronConfig>().expected_devices, 0u);    // from the profile
  EXPECT_EQ(c->section<NodeConfig>().expected_cpus, 192u);
  ASSERT_TRUE(c->section<NodeConfig>().min_memory_gib);
  EXPECT_DOUBLE_EQ(*c->section<NodeConfig>().min_memory_gib, 2048 * 0.9);  // less the default 10 % slack
}

TEST(Profiles, TheProfileGivesTheGpuAndNvlinkCountsUnlessTheConfigDoes) {
  auto c = parse_config("", "f.toml");
  ASSERT_TRUE(c) << c.error();
  apply_profile(*c, *resolve_profile("p5.48xlarge", "/nonexistent"));
  EXPECT_EQ(c->section<GpuConfig>().thresholds.expected_count, 8u);
  EXPECT_EQ(c->section<GpuConfig>().thresholds.nvlink_expected_links, 18u);
  auto own = parse_config("[checks.gpu]\nexpected_count = 4\n", "f.toml");
  ASSERT_TRUE(own) << own.error();
  apply_profile(*own, *resolve_profile("p5.48xlarge", "/nonexistent"));
  EXPECT_EQ(own->section<GpuConfig>().thresholds.expected_count, 4u);
  auto trn = parse_config("", "f.toml");
  apply_profile(*trn, *resolve_profile("trn1.32xlarge", "/nonexistent"));
  EXPECT_EQ(trn->section<GpuConfig>().thresholds.expected_count, 0u);  // no GPUs: none expected
}
