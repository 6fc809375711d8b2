// The DCGM deep check: parsing dcgmi's JSON (both layouts), the idle-node rule, a broken dcgmi.
#include <fstream>

#include <gtest/gtest.h>

#include "checks/dcgm/dcgm_check.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
// DCGM 3.x: results inside test_categories.
const char* kDcgm3Fail = R"({"DCGM GPU Diagnostic": {"test_categories": [
  {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}]},
  {"category": "Hardware", "tests": [{"name": "Memory", "results": [
     {"gpu_ids": "0", "status": "Pass"},
     {"gpu_ids": "3", "status": "Fail", "warnings": [{"warning": "Error using CUDA API cudaMalloc", "error_id": 42}]}]}]}]},
  "version": "3.3.5"})";
// DCGM 4.x: tests at the top, per-entity results.
const char* kDcgm4Warn = R"({"DCGM Diagnostic": {"tests": [
  {"name": "pcie", "results": [{"entity_id": 1, "status": "Warn", "info": "PCIe replay rate high"}]},
  {"name": "memory", "results": [{"entity_id": 1, "status": "Pass"}]}]}})";

std::filesystem::path fake_dcgmi(const ar::test::TempDir& dir, const std::string& output, int exit_code) {
  auto out = dir / "out.json";
  std::ofstream(out) << output;
  auto script = dir / "dcgmi";
  std::ofstream(script) << "#!/bin/sh\necho \"$@\" >" << (dir / "args").string() << "\ncat " << out.string()
                        << "\nexit " << exit_code << "\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return script;
}
}  // namespace

TEST(DcgmParse, FindsFailuresInBothLayouts) {
  auto f3 = parse_dcgm_diag(kDcgm3Fail);
  ASSERT_TRUE(f3) << f3.error();
  ASSERT_EQ(f3->size(), 1u);
  EXPECT_EQ((*f3)[0].test, "Memory");
  EXPECT_EQ((*f3)[0].gpus, "3");
  EXPECT_EQ((*f3)[0].status, "Fail");
  EXPECT_EQ((*f3)[0].message, "Error using CUDA API cudaMalloc");
  auto f4 = parse_dcgm_diag(kDcgm4Warn);
  ASSERT_TRUE(f4) << f4.error();
  ASSERT_EQ(f4->size(), 1u);
  EXPECT_EQ((*f4)[0].test, "pcie");
  EXPECT_EQ((*f4)[0].status, "Warn");
  EXPECT_FALSE(parse_dcgm_diag("Error: unable to connect to host engine"));
}

TEST(DcgmCheck, AFailedTestIsAFaultNamingTestAndGpu) {
  ar::test::TempDir dir;
  DcgmConfig c;
  c.enabled = true;
  c.level = 2;
  c.dcgmi = fake_dcgmi(dir, kDcgm3Fail, 226).string();
  DcgmCheck check(c, std::make_shared<std::atomic<std::size_t>>(0));
  auto r = check.run().at(0);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.action, Remedy::drain);
  EXPECT_EQ(r.code, "GPU-DCGM-DIAG");
  EXPECT_NE(r.message.find("Memory failed on GPU 3"), std::string::npos) << r.message;
  std::ifstream args(dir / "args");
  std::string line;
  std::getline(args, line);
  EXPECT_EQ(line, "diag -r 2 -j");
}

TEST(DcgmCheck, WaitsForAnIdleNodeAndRunsOncePerInterval) {
  ar::test::TempDir dir;
  DcgmConfig c;
  c.dcgmi = fake_dcgmi(dir, kDcgm4Warn, 0).string();
  auto jobs = std::make_shared<std::atomic<std::size_t>>(2);
  DcgmCheck check(c, jobs);
  auto r = check.run().at(0);
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_NE(r.message.find("waits for an idle node"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "args"));  // not run under jobs
  jobs->store(0);
  EXPECT_EQ(check.run().at(0).status, Status::warn);
  std::filesystem::remove(dir / "args");
  EXPECT_EQ(check.run().at(0).status, Status::warn);     // the last verdict stands...
  EXPECT_FALSE(std::filesystem::exists(dir / "args"));  // ...without running it again
  check.requested_on_demand();
  check.run();
  EXPECT_TRUE(std::filesystem::exists(dir / "args"));   // an admin's request runs it now
}

TEST(DcgmCheck, AMissingOrBrokenDcgmiIsABrokenCheck) {
  ar::test::TempDir dir;
  DcgmConfig c;
  c.dcgmi = (dir / "no-such-dcgmi").string();
  DcgmCheck missing(c, nullptr);
  auto r = missing.run().at(0);
  EXPECT_EQ(r.status, Status::error);
  c.dcgmi = fake_dcgmi(dir, "Error: unable to connect to host engine", 1).string();
  DcgmCheck broken(c, nullptr);
  r = broken.run().at(0);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_NE(r.message.find("exit 1"), std::string::npos) << r.message;
}
