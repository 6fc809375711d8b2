// What `healthctl clear CODE` may clear: a code the last sweep's results hold, wherever it is held
// (checks/check.hpp held_codes), typed: nothing is read back out of a result's JSON detail.
#include <gtest/gtest.h>

#include "checks/check.hpp"

using namespace ar::healthd;

TEST(HeldCodes, AResultsCodeOrAnyCodeItHoldsBesides) {
  CheckResult kernel_log;
  kernel_log.check = "kernel_log";
  kernel_log.status = Status::fault;
  kernel_log.code = "KMSG-MCE";
  kernel_log.also_held = {"KMSG-MCE", "FS-IO-ERR"};
  CheckResult xid;
  xid.check = "gpu_xid";
  xid.status = Status::fault;
  xid.code = "GPU-XID-79";
  xid.also_held = {"GPU-XID-79", "GPU-XID-48"};
  CheckResult cpus;
  cpus.check = "node.cpus";
  cpus.code = "NODE-CPUS";  // passed: its code is nothing to clear
  CheckResult broken;
  broken.check = "ec2";
  broken.status = Status::error;
  broken.code = "EC2-IMDS-UNREACHABLE";
  const auto held = held_codes({kernel_log, xid, cpus, broken});
  EXPECT_EQ(held, (std::set<std::string>{"KMSG-MCE", "FS-IO-ERR", "GPU-XID-79", "GPU-XID-48", "EC2-IMDS-UNREACHABLE"}));
  EXPECT_TRUE(held_codes({}).empty());
}
