// The "decision:" log line: one per decision, in one form a log shipper can match, at the level that
// decides its journald priority (warning for what takes a node or a job out, info for what brings
// them back).
#include <gtest/gtest.h>

#include "log_capture.hpp"
#include "telemetry/notice_log.hpp"

namespace ar::healthd {
namespace {

Notice notice(NoticeKind kind, std::uint32_t job, std::string code, std::string action, std::string message) {
  Notice n;
  n.kind = kind;
  n.node = "n1";
  n.job_id = job;
  n.code = std::move(code);
  n.action = std::move(action);
  n.message = std::move(message);
  return n;
}

TEST(NoticeLog, ARequeueIsOneWarningNamingNodeJobOwnerCodeAndAction) {
  ar::test::LogCapture log;
  NoticeLog sink;
  auto n = notice(NoticeKind::requeue, 42, "GPU-XID-79", "requeue", "requeued after attempt 0");
  n.uid = 1000;
  sink.notify(n);
  EXPECT_EQ(log.text(),
            "[warning] decision: requeue node n1 job 42 uid 1000 code GPU-XID-79 action requeue: requeued after attempt 0\n");
}

TEST(NoticeLog, WhatBringsANodeOrAJobBackIsInfoAndANodeNoticeHasNoJob) {
  ar::test::LogCapture log;
  NoticeLog sink;
  sink.notify(notice(NoticeKind::node_returned, 0, "GPU-XID-79", "resume", "healthy again"));
  sink.notify(notice(NoticeKind::resumed, 42, "", "", "running again"));
  EXPECT_EQ(log.text(),
            "[info] decision: node_returned node n1 job - code GPU-XID-79 action resume: healthy again\n"
            "[info] decision: resumed node n1 job 42 code - action -: running again\n");
}

TEST(NoticeLog, AnIncidentIsLeftToTheResponderThatFoundIt) {
  ar::test::LogCapture log;
  NoticeLog sink;
  sink.notify(notice(NoticeKind::incident, 42, "GPU-XID-79", "drain", "fault"));
  EXPECT_EQ(log.lines(), 0u);
}

TEST(NoticeLog, HostileTextIsLoggedAsTextNeverAsAFormat) {
  ar::test::LogCapture log;
  NoticeLog sink;
  sink.notify(notice(NoticeKind::drain, 0, "KMSG-{}", "drain", "{:>999999999} %s%n {0}"));
  EXPECT_EQ(log.text(), "[warning] decision: drain node n1 job - code KMSG-{} action drain: {:>999999999} %s%n {0}\n");
}

}  // namespace
}  // namespace ar::healthd
