#include <gtest/gtest.h>

#include "actions/slurm_client.hpp"

using namespace ar::healthd;

TEST(ScontrolRecord, KeepsValuesWithSpacesWhole) {
  auto r = parse_scontrol_record(
      "NodeName=n2 Arch=x86_64 CoresPerSocket=1 State=IDLE+DRAIN ThreadsPerCore=1 Partitions=debug,gpu "
      "Reason=healthd: KMSG-MCE: machine check on cpu 3 [root@2026-11-29T16:00:00] Comment=(null)");
  EXPECT_EQ(r["NodeName"], "n2");
  EXPECT_EQ(r["State"], "IDLE+DRAIN");
  EXPECT_EQ(r["Partitions"], "debug,gpu");
  EXPECT_EQ(r["Reason"], "healthd: KMSG-MCE: machine check on cpu 3 [root@2026-11-29T16:00:00]");
  EXPECT_EQ(r["Comment"], "(null)");
}

TEST(ScontrolRecord, JobRecord) {
  auto r = parse_scontrol_record(
      "JobId=42 JobName=wrap UserId=root(0) JobState=PENDING Reason=BeginTime Dependency=(null) Requeue=1 "
      "Restarts=2 BatchFlag=1 NodeList=(null) Command=(null) Comment=auto-resume: cap of 3 reached");
  EXPECT_EQ(r["JobId"], "42");
  EXPECT_EQ(r["JobState"], "PENDING");
  EXPECT_EQ(r["Reason"], "BeginTime");
  EXPECT_EQ(r["Restarts"], "2");
  EXPECT_EQ(r["Comment"], "auto-resume: cap of 3 reached");
}

TEST(NodeInfo, DrainStates) {
  NodeInfo n;
  n.state = "MIXED+DRAIN";
  EXPECT_TRUE(n.drained_or_draining());
  n.state = "IDLE";
  EXPECT_FALSE(n.drained_or_draining());
}
