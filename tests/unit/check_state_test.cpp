// The checks' own state files (kernel-log faults, XIDs) refuse numbers out of range as a whole:
// a damaged file is not half believed (state/json_fields.hpp).
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checks/kernel_log/kernel_log_check.hpp"
#include "checks/gpu/xid_check.hpp"
#include "config/config.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
nlohmann::json read_state(const std::filesystem::path& f) { return nlohmann::json::parse(std::ifstream(f)); }
void write(const std::filesystem::path& f, const nlohmann::json& j) { std::ofstream(f, std::ios::trunc) << j.dump(); }

XidEvent xid_event(unsigned xid, XidCheck::Clock::time_point at, std::string gpu) {
  XidEvent e;
  e.xid = xid;
  e.gpu = std::move(gpu);
  e.at = at;
  e.source = "nvml";
  return e;
}
}  // namespace

TEST(CheckState, XidStateWithNumbersOutOfRangeIsRefusedWhole) {
  const auto now = XidCheck::Clock::now();
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"xid", -1}, {"xid", 79.5}, {"total", -3}, {"last_ms", 9223372036854775807LL}, {"last_ms", -1}}) {
    ar::test::TempDir dir;
    {
      XidCheck check(XidPolicy::defaults(), 600s, dir / "xid.json");
      check.record(xid_event(8, now, "0000:19:00"));
      check.record(xid_event(79, now, "0000:18:00"));
    }
    auto j = read_state(dir / "xid.json");
    ASSERT_EQ(j.at("tracked").size(), 2u);
    j["tracked"][1][key] = value;  // the second entry is damaged: the first must not be kept either
    write(dir / "xid.json", j);
    XidCheck restarted(XidPolicy::defaults(), 600s, dir / "xid.json");
    EXPECT_EQ(restarted.judge(now + 1s).status, Status::ok) << key << " = " << value.dump();
  }
}

TEST(CheckState, XidEventTimesOutOfRangeAreRefused) {
  ar::test::TempDir dir;
  const auto now = XidCheck::Clock::now();
  {
    XidCheck check(XidPolicy::defaults(), 600s, dir / "xid.json");
    check.record(xid_event(79, now, "0000:18:00"));
  }
  auto j = read_state(dir / "xid.json");
  j["tracked"][0]["events_ms"] = {1.5e300};
  write(dir / "xid.json", j);
  XidCheck restarted(XidPolicy::defaults(), 600s, dir / "xid.json");
  EXPECT_EQ(restarted.judge(now + 1s).status, Status::ok);
}

TEST(CheckState, KernelLogStateWithNumbersOutOfRangeIsRefusedWhole) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"lines", -1}, {"lines", 2.5}, {"first_seen_ms", -9223372036854775807LL}, {"last_seen_ms", 1e300}}) {
    ar::test::TempDir dir;
    std::filesystem::create_directories(dir / "var/log");
    std::ofstream(dir / "var/log/kern.log") << "";
    KernelLogConfig config;
    config.path = "/var/log/kern.log";
    config.hold = 600s;
    {
      KernelLogCheck check(config, dir.path(), dir / "state.json");
      std::ofstream(dir / "var/log/kern.log", std::ios::app)
          << "<0>mce: [Hardware Error]: x\n<2>EXT4-fs error (device nvme1n1): ext4_find_entry\n";
      ASSERT_TRUE(check.poll());
    }
    auto j = read_state(dir / "state.json");
    ASSERT_EQ(j.at("active").size(), 2u);
    j["active"][1][key] = value;
    write(dir / "state.json", j);
    KernelLogCheck again(config, dir.path(), dir / "state.json");
    EXPECT_EQ(again.run().at(0).status, Status::ok) << key << " = " << value.dump();
  }
}
