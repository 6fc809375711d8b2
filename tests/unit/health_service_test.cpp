// What `healthctl clear CODE` may clear: a code the engine's last status holds, wherever it is held.
#include <gtest/gtest.h>

#include "engine/health_service.hpp"

using namespace ar::healthd;

TEST(HealthService, AClearableCodeIsAResultsOrAnActiveKernelLogFaultOrAnyXidHeld) {
  const auto health = nlohmann::json::parse(R"({"checks": [
    {"check": "kernel_log", "status": "fault", "code": "KMSG-MCE",
     "detail": {"active": [{"code": "KMSG-MCE"}, {"code": "FS-IO-ERR"}]}},
    {"check": "gpu_xid", "status": "fault", "code": "GPU-XID-79",
     "detail": {"events": [{"xid": 79, "active": true}, {"xid": 48, "active": true}]}},
    {"check": "node.cpus", "status": "ok", "code": "NODE-CPUS"},
    7, {"check": "odd", "detail": [1, 2]}
  ]})");
  EXPECT_TRUE(fault_code_is_active(health, "KMSG-MCE"));
  EXPECT_TRUE(fault_code_is_active(health, "FS-IO-ERR")) << "not the worst, but active";
  EXPECT_TRUE(fault_code_is_active(health, "GPU-XID-79"));
  EXPECT_TRUE(fault_code_is_active(health, "GPU-XID-48")) << "held beside the worst XID";
  EXPECT_FALSE(fault_code_is_active(health, "NODE-CPUS")) << "a passing result's code is nothing to clear";
  EXPECT_FALSE(fault_code_is_active(health, "GPU-XID-31"));
  EXPECT_FALSE(fault_code_is_active(nlohmann::json::object(), "KMSG-MCE"));
}
