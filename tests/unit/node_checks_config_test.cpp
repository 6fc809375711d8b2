// The config sections of the EFA, Neuron and node checks.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "checks/registry.hpp"
#include "checks/efa/efa_config.hpp"
#include "checks/neuron/neuron_config.hpp"
#include "checks/node/node_config.hpp"

using namespace ar::healthd;

TEST(NodeChecksConfig, DefaultsCannotDrainANodeWithoutTheHardware) {
  auto c = parse_config("", "f.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_TRUE(c->section<EfaConfig>().enabled);
  EXPECT_FALSE(c->section<EfaConfig>().expected_devices);
  EXPECT_EQ(c->section<EfaConfig>().counter_action, Remedy::warn);
  EXPECT_TRUE(c->section<EfaConfig>().counter_thresholds.contains("rdma_read_wr_err"));
  EXPECT_FALSE(c->section<NeuronConfig>().expected_devices);
  EXPECT_EQ(c->section<NeuronConfig>().max_uncorrected, 0u);
  EXPECT_FALSE(c->section<NodeConfig>().expected_cpus);
  EXPECT_FALSE(c->section<NodeConfig>().min_memory_gib);
  EXPECT_EQ(c->section<NodeConfig>().min_shm_gib, 0);
  EXPECT_EQ(c->section<NodeConfig>().required_processes, (std::vector<std::string>{"munged", "slurmd"}));
  EXPECT_TRUE(c->instance_type.empty());
}

TEST(NodeChecksConfig, ReadsEveryKey) {
  auto c = parse_config(R"(
[daemon]
instance_type = "p5.48xlarge"
profile_dir = "/etc/x/profiles"

[checks.efa]
enabled = true
expected_devices = 32
counter_window_s = 120
counter_action = "drain"
[checks.efa.counter_thresholds]
rx_drops = 5
retrans_timeout_events = 7

[checks.neuron]
enabled = false
expected_devices = 16
max_uncorrected = 2

[checks.node]
expected_cpus = 192
min_memory_gib = 1900.5
memory_slack_pct = 5
min_shm_gib = 64
clock_action = "none"
required_processes = ["munged", "slurmd", "sshd"]
)",
                        "f.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->instance_type, "p5.48xlarge");
  EXPECT_EQ(c->profile_dir, "/etc/x/profiles");
  EXPECT_EQ(c->section<EfaConfig>().expected_devices, 32u);
  EXPECT_EQ(c->section<EfaConfig>().counter_window.count(), 120);
  EXPECT_EQ(c->section<EfaConfig>().counter_action, Remedy::drain);
  EXPECT_EQ(c->section<EfaConfig>().counter_thresholds, (std::map<std::string, std::uint64_t>{{"retrans_timeout_events", 7}, {"rx_drops", 5}}));
  EXPECT_FALSE(c->section<NeuronConfig>().enabled);
  EXPECT_EQ(c->section<NeuronConfig>().expected_devices, 16u);
  EXPECT_EQ(c->section<NeuronConfig>().max_uncorrected, 2u);
  EXPECT_EQ(c->section<NodeConfig>().expected_cpus, 192u);
  EXPECT_DOUBLE_EQ(*c->section<NodeConfig>().min_memory_gib, 1900.5);
  EXPECT_DOUBLE_EQ(c->section<NodeConfig>().memory_slack_pct, 5);
  EXPECT_DOUBLE_EQ(c->section<NodeConfig>().min_shm_gib, 64);
  EXPECT_EQ(c->section<NodeConfig>().clock_action, Remedy::none);
  EXPECT_EQ(c->section<NodeConfig>().required_processes.size(), 3u);
}

TEST(NodeChecksConfig, BadValuesNameFileLineAndKey) {
  struct Case {
    const char* text;
    const char* line;
    const char* key;
  };
  for (const auto& k : {Case{"[checks.efa]\n\nexpected_devices = -1\n", "f.toml:3:", "expected_devices"},
                        Case{"[checks.efa]\ncounter_action = \"explode\"\n", "f.toml:2:", "counter_action"},
                        Case{"[checks.efa.counter_thresholds]\nrx_drops = \"many\"\n", "f.toml:", "rx_drops"},
                        Case{"[checks.neuron]\nexpected = 2\n", "f.toml:2:", "expected"},
                        Case{"[checks.node]\nrequired_processes = \"munged\"\n", "f.toml:2:", "required_processes"},
                        Case{"[checks.node]\nmemory_slack_pct = 90\n", "f.toml:2:", "memory_slack_pct"},
                        Case{"[daemon]\nprofile_dir = \"relative\"\n", "f.toml:2:", "profile_dir"}}) {
    auto c = parse_config(k.text, "f.toml");
    ASSERT_FALSE(c) << k.text;
    EXPECT_NE(c.error().find(k.line), std::string::npos) << c.error();
    EXPECT_NE(c.error().find(k.key), std::string::npos) << c.error();
  }
}
