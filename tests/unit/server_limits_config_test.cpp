#include <gtest/gtest.h>

#include "config/config.hpp"
#include "checks/registry.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

TEST(ServerLimitsConfig, DefaultsBoundEveryClient) {
  auto c = parse_config("", "t.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->server.max_connections, 1024u);
  EXPECT_EQ(c->server.root_reserved, 256u);
  EXPECT_EQ(c->server.max_connections_per_uid, 32u);
  EXPECT_EQ(c->server.idle_timeout, 60s);
  EXPECT_EQ(c->server.message_timeout, 30s);
  EXPECT_EQ(c->server.write_timeout, 10s);
  EXPECT_EQ(c->slurm.user, "slurm");
}

TEST(ServerLimitsConfig, KeysAreRead) {
  auto c = parse_config(
      "[server]\nmax_connections = 100\nroot_reserved = 20\nmax_connections_per_uid = 4\n"
      "idle_timeout_ms = 1500\nmessage_timeout_ms = 2500\nwrite_timeout_ms = 500\n[slurm]\nuser = \"slurmadm\"\n",
      "t.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->server.max_connections, 100u);
  EXPECT_EQ(c->server.root_reserved, 20u);
  EXPECT_EQ(c->server.max_connections_per_uid, 4u);
  EXPECT_EQ(c->server.idle_timeout, 1500ms);
  EXPECT_EQ(c->server.message_timeout, 2500ms);
  EXPECT_EQ(c->server.write_timeout, 500ms);
  EXPECT_EQ(c->slurm.user, "slurmadm");
}

TEST(ServerLimitsConfig, ReservingEverySlotForRootIsRefused) {
  auto c = parse_config("[server]\nmax_connections = 100\nroot_reserved = 100\n", "t.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("root_reserved"), std::string::npos) << c.error();
}

TEST(ServerLimitsConfig, AZeroCapIsRefusedWithItsPosition) {
  auto c = parse_config("[server]\nmax_connections_per_uid = 0\n", "t.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("t.toml:2"), std::string::npos) << c.error();
}
