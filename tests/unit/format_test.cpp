#include <gtest/gtest.h>

#include "format.hpp"

using nlohmann::json;

TEST(HealthctlFormat, JobsTableShowsFlagStepAndExit) {
  json d = R"({"node":"n2","jobs":[{"job_id":42,"uid":0,"restart_count":0,"auto_resume":true,"running":false,
    "steps":[{"step":"batch","step_id":4294967291,"restart_count":0,"auto_resume":true,"running":false,"task_exits":[]},
             {"step":"0","step_id":0,"restart_count":0,"auto_resume":true,"running":false,
              "task_exits":[{"task_rank":1,"wait_status":768,"description":"exit 3"}]}]}]})"_json;
  auto out = ar::healthctl::format_jobs(d);
  EXPECT_NE(out.find("42"), std::string::npos) << out;
  EXPECT_NE(out.find("yes"), std::string::npos) << out;
  EXPECT_NE(out.find("task 1: exit 3"), std::string::npos) << out;
  EXPECT_NE(out.find("batch"), std::string::npos) << out;
}

TEST(HealthctlFormat, EmptyJobsSaySo) {
  EXPECT_EQ(ar::healthctl::format_jobs(json{{"node", "n1"}, {"jobs", json::array()}}), "no jobs known on node n1\n");
}

TEST(HealthctlFormat, StatusNamesNode) {
  auto out = ar::healthctl::format_status(json{{"node", "n3"}, {"version", "0.1"}, {"checks", json::array()}});
  EXPECT_NE(out.find("n3"), std::string::npos);
}

TEST(HealthctlFormat, StatusSaysWhenSlurmIsNotReady) {
  auto health = json{{"node", {{"faulty", false}, {"pending_actions", 1},
                               {"slurm", "slurmctld knows no node 'gpu-typo': set [daemon] node_name"}}}};
  auto out = ar::healthctl::format_status(json{{"node", "gpu-typo"}, {"health", health}});
  EXPECT_NE(out.find("slurm:        slurmctld knows no node 'gpu-typo': set [daemon] node_name"), std::string::npos) << out;
  auto ready = ar::healthctl::format_status(json{{"node", "n1"}, {"health", {{"node", {{"faulty", false}}}}}});
  EXPECT_EQ(ready.find("slurm:"), std::string::npos);
}

TEST(HealthctlFormat, StatusSaysReportOnlyMode) {
  auto on = ar::healthctl::format_status(json{{"node", "n1"}, {"health", {{"node", {{"faulty", true}, {"report_only", true}}}}}});
  EXPECT_NE(on.find("REPORT ONLY"), std::string::npos) << on;
  auto off = ar::healthctl::format_status(json{{"node", "n1"}, {"health", {{"node", {{"faulty", true}, {"report_only", false}}}}}});
  EXPECT_EQ(off.find("REPORT ONLY"), std::string::npos) << off;
}
