// The XID policy table and the XID check: thresholds, both sources, hold, restart, reboot.
#include <fstream>

#include <gtest/gtest.h>

#include "checks/gpu/xid_check.hpp"
#include "checks/gpu/xid_policy.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
XidEvent event(unsigned xid, XidCheck::Clock::time_point at, std::string source = "nvml", std::string gpu = "0000:18:00") {
  return {xid, std::move(gpu), std::move(source), "xid " + std::to_string(xid), at};
}
const XidCheck::Clock::time_point xid_t0 = XidCheck::Clock::time_point(std::chrono::seconds(1'800'000'000));
}  // namespace

TEST(XidPolicy, DefaultsFollowTheCatalogueBuckets) {
  auto p = XidPolicy::defaults();
  EXPECT_EQ(p.rule_for(79).action, Remedy::reboot);
  EXPECT_EQ(p.rule_for(160).action, Remedy::reboot);
  for (unsigned x : {48u, 74u, 94u, 95u, 119u, 120u, 140u}) {
    // A GPU reset cures these: the node is drained first (takes_node_out), the reset follows.
    EXPECT_EQ(node_action_of(p.rule_for(x).action), Remedy::reset_gpu) << x;
    EXPECT_TRUE(takes_node_out(node_action_of(p.rule_for(x).action))) << x;
    EXPECT_EQ(status_for(p.rule_for(x).action), Status::fault) << x;
  }
  for (unsigned x : {13u, 31u, 43u, 45u, 63u, 68u, 92u, 109u}) {
    EXPECT_LT(node_action_of(p.rule_for(x).action), Remedy::drain) << x;
    EXPECT_NE(status_for(p.rule_for(x).action), Status::fault) << x;
  }
  EXPECT_EQ(p.rule_for(999).action, Remedy::drain);  // unknown: drained, an admin may lower it
}

TEST(XidPolicy, ActionNamesRoundTrip) {
  for (auto a : kXidRemedies)
    EXPECT_EQ(parse_remedy(to_string(a)), a);
  EXPECT_FALSE(parse_remedy("explode"));
}

TEST(XidLine, ParsesTheNvrmFormat) {
  auto e = parse_xid_line("NVRM: Xid (PCI:0000:3B:00): 79, pid=1, name=python, GPU has fallen off the bus.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 79u);
  EXPECT_EQ(e->gpu, "0000:3b:00");
  EXPECT_EQ(e->source, "kernel_log");
  EXPECT_EQ(e->text, "NVRM: Xid (PCI:0000:3B:00): 79, pid=1, name=python, GPU has fallen off the bus.");
  // With MIG, the driver names the GPU instance after the address.
  e = parse_xid_line("NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 94u);
  EXPECT_EQ(e->gpu, "0000:01:00");
  EXPECT_FALSE(parse_xid_line("NVRM: GPU at PCI:0000:3b:00: GPU-abc"));
  EXPECT_FALSE(parse_xid_line("Xid 79 in a user's echo"));
}

namespace {
KernelRecord record(int level, int facility, std::string text) {
  KernelRecord r;
  r.level = level;
  r.facility = facility;
  r.text = std::move(text);
  return r;
}
const std::string kXid79 = "NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=x, GPU has fallen off the bus.";
}  // namespace

// Issue 31: a user named a file after an XID and crashed in it; the kernel's segfault report (at
// KERN_INFO) held the name, and the node was drained and its cure chain started.
TEST(XidLine, OnlyTheDriversOwnRecordIsAnXid) {
  // The driver prints without a level: the kernel's default, KERN_WARNING (or err on older drivers).
  EXPECT_TRUE(parse_xid_record(record(4, kFacilityKernel, kXid79)));
  EXPECT_TRUE(parse_xid_record(record(3, kFacilityKernel, kXid79)));
  EXPECT_TRUE(parse_xid_record(record(5, kFacilityKernel, kXid79)));  // a kernel whose default level is notice
  // The same text anywhere but where the message starts: a name in the kernel's report of a crash.
  EXPECT_FALSE(parse_xid_record(record(6, kFacilityKernel, "a.out[1234]: segfault at 0 ip 000055d0 sp 00007ffc error 4 in " + kXid79 + "[55d0+1000]")));
  EXPECT_FALSE(parse_xid_record(record(3, kFacilityKernel, "a.out[1234]: segfault at 0 ip 000055d0 sp 00007ffc error 4 in " + kXid79 + "[55d0+1000]")));
  EXPECT_FALSE(parse_xid_line("[ 1234.5] " + kXid79));
  EXPECT_FALSE(parse_xid_line(" " + kXid79));
  // At the start, at a level no XID has (the segfault report's own level).
  EXPECT_FALSE(parse_xid_record(record(6, kFacilityKernel, kXid79)));
  EXPECT_FALSE(parse_xid_record(record(7, kFacilityKernel, kXid79)));
  // Written to /dev/kmsg by user space (root included): LOG_USER, whatever level it claims.
  EXPECT_FALSE(parse_xid_record(record(3, kFacilityUser, kXid79)));
  EXPECT_FALSE(parse_xid_record(record(0, kFacilityUser, kXid79)));
  EXPECT_FALSE(parse_xid_record(record(3, 3, kXid79)));  // LOG_DAEMON
  // The tap judges the same way.
  XidCheck check(XidPolicy::defaults(), 60s);
  EXPECT_EQ(check.take_kernel_log_record(record(6, kFacilityKernel, "x[1]: segfault in " + kXid79)), LineVerdict::not_mine);
  EXPECT_EQ(check.take_kernel_log_record(record(3, kFacilityUser, kXid79)), LineVerdict::not_mine);
  EXPECT_EQ(check.judge(XidCheck::Clock::now()).status, Status::ok);
  EXPECT_EQ(check.take_kernel_log_record(record(4, kFacilityKernel, kXid79)), LineVerdict::new_fault);
  EXPECT_EQ(check.judge(XidCheck::Clock::now()).code, "GPU-XID-79");
}

TEST(XidCheck, ARebootXidIsAFaultCallingForAReboot) {
  XidCheck check(XidPolicy::defaults(), 60s);
  check.set_gpu_labels({{"0000:18:00", "GPU 1 (00000000:18:00.0, GPU-aaa)"}});
  EXPECT_TRUE(check.record(event(79, xid_t0)));
  auto r = check.judge(xid_t0 + 1s);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.action, Remedy::reboot);
  EXPECT_EQ(r.code, "GPU-XID-79");
  EXPECT_EQ(r.xid, 79u);  // typed: the cure chains of [[cure.chain]] xid = 79 apply
  EXPECT_NE(r.message.find("GPU 1 (00000000:18:00.0, GPU-aaa)"), std::string::npos) << r.message;
}

TEST(XidCheck, AnApplicationXidOnlyWarns) {
  XidCheck check(XidPolicy::defaults(), 60s);
  EXPECT_FALSE(check.record(event(13, xid_t0)));
  auto r = check.judge(xid_t0 + 1s);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_LT(r.action, Remedy::drain);
}

TEST(XidCheck, ANotifyOnlyXidKeepsTheNodeInAndIsJudgedAtOnce) {
  auto policy = XidPolicy::defaults();
  policy.set(74, {Remedy::notify_only, 1, 0s, "NVLink error"});
  XidCheck check(policy, 60s);
  EXPECT_TRUE(check.record(event(74, xid_t0)));  // a notice to carry out: judged now, not at the next sweep
  auto r = check.judge(xid_t0 + 1s);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_EQ(r.action, Remedy::notify_only);
  EXPECT_EQ(r.code, "GPU-XID-74");
  // It outranks an application's XID (a warning), and a drain XID outranks it.
  check.record(event(13, xid_t0 + 2s));
  EXPECT_EQ(check.judge(xid_t0 + 3s).action, Remedy::notify_only);
  check.record(event(48, xid_t0 + 4s));
  EXPECT_EQ(check.judge(xid_t0 + 5s).action, Remedy::reset_gpu);
}

TEST(XidCheck, HoldsEveryXidItTracksNotOnlyTheWorst) {
  XidCheck check(XidPolicy::defaults(), 60s);
  check.record(event(79, xid_t0));
  check.record(event(13, xid_t0));
  auto r = check.judge(xid_t0 + 1s);
  EXPECT_EQ(r.code, "GPU-XID-79");
  EXPECT_EQ(held_codes({r}), (std::set<std::string>{"GPU-XID-79", "GPU-XID-13"}));  // healthctl clear may name either
}

TEST(XidCheck, TheSameEventFromBothSourcesCountsOnce) {
  auto policy = XidPolicy::defaults();
  policy.set(48, {Remedy::reset_gpu, 2, 600s, "double-bit ECC error"});
  XidCheck check(policy, 60s);
  EXPECT_FALSE(check.record(event(48, xid_t0, "nvml")));
  EXPECT_FALSE(check.record(event(48, xid_t0 + 1s, "kernel_log")));  // the same one, seen in the log
  EXPECT_EQ(check.judge(xid_t0 + 2s).status, Status::warn);
  EXPECT_TRUE(check.record(event(48, xid_t0 + 30s, "nvml")));        // a second one
  const auto r = check.judge(xid_t0 + 31s);
  EXPECT_EQ(r.status, Status::fault);
  // The tally the metrics count from (healthd_xid_events_total): two events, the newest at +30 s.
  ASSERT_EQ(r.xids.size(), 1u);
  EXPECT_EQ(r.xids[0].xid, 48u);
  EXPECT_EQ(r.xids[0].count, 2u);
  EXPECT_EQ(r.xids[0].last, xid_t0 + 30s);
  EXPECT_EQ(r.xids[0].gpu, "0000:18:00");
}

TEST(XidCheck, ACountInAWindowHoldsOnlyWithinTheWindow) {
  auto policy = XidPolicy::defaults();
  policy.set(92, {Remedy::drain, 3, 60s, "high single-bit ECC error rate"});
  XidCheck check(policy, 30s);
  EXPECT_FALSE(check.record(event(92, xid_t0)));
  EXPECT_FALSE(check.record(event(92, xid_t0 + 50s)));
  EXPECT_FALSE(check.record(event(92, xid_t0 + 100s)));  // the first fell out of the window
  auto r = check.judge(xid_t0 + 101s);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_NE(r.message.find("2 of 3 within 60 s"), std::string::npos) << r.message;
  EXPECT_TRUE(check.record(event(92, xid_t0 + 110s)));
  EXPECT_EQ(check.judge(xid_t0 + 111s).status, Status::fault);
}

TEST(XidCheck, AFaultHoldsThenClearsButNeverBeforeASweepSawIt) {
  XidCheck check(XidPolicy::defaults(), 10s);
  check.record(event(48, xid_t0));
  EXPECT_EQ(check.judge(xid_t0 + 100s).status, Status::fault);  // late sweep: still reported once
  EXPECT_EQ(check.judge(xid_t0 + 101s).status, Status::ok);
}

TEST(XidCheck, IgnoredXidsLeaveNoTrace) {
  auto policy = XidPolicy::defaults();
  policy.set(43, {Remedy::none, 1, 0s, "ours"});
  XidCheck check(policy, 10s);
  EXPECT_FALSE(check.record(event(43, xid_t0)));
  EXPECT_EQ(check.judge(xid_t0 + 1s).status, Status::ok);
}

TEST(XidCheck, FaultsSurviveARestartButARebootCuresWhatItCures) {
  ar::test::TempDir dir;
  auto boot = dir / "boot_id";
  std::ofstream(boot) << "boot-1\n";
  auto now = XidCheck::Clock::now();
  {
    XidCheck check(XidPolicy::defaults(), 600s, dir / "xid.json", boot);
    check.record(event(79, now, "nvml", "0000:18:00"));
    check.record(event(8, now, "nvml", "0000:19:00"));
  }
  {
    XidCheck restarted(XidPolicy::defaults(), 600s, dir / "xid.json", boot);
    auto r = restarted.judge(now + 1s);
    EXPECT_EQ(r.action, Remedy::reboot);
    EXPECT_EQ(r.detail["events"].size(), 2u);
  }
  std::ofstream(boot) << "boot-2\n";  // the node rebooted
  XidCheck rebooted(XidPolicy::defaults(), 600s, dir / "xid.json", boot);
  auto r = rebooted.judge(now + 2s);
  EXPECT_EQ(r.code, "GPU-XID-8");  // XID 79 is cured by the reboot; XID 8 (inspect) is not
  EXPECT_EQ(r.action, Remedy::drain);
}

TEST(XidCheck, RepeatsAreWrittenByTheNextSweepAndSurviveARestart) {
  ar::test::TempDir dir;
  auto policy = XidPolicy::defaults();
  policy.set(92, {Remedy::drain, 3, 600s, "high single-bit ECC error rate"});
  auto now = XidCheck::Clock::now();
  {
    XidCheck check(policy, 600s, dir / "xid.json");
    check.record(event(92, now));
    check.record(event(92, now + 10s));
    check.judge(now + 11s);
  }
  XidCheck restarted(policy, 600s, dir / "xid.json");
  EXPECT_TRUE(restarted.record(event(92, now + 20s)));  // the third within the window: a fault
  EXPECT_EQ(restarted.judge(now + 21s).status, Status::fault);
}

TEST(XidLine, A60000ByteLineIsParsedInLinearTime) {
  // std::regex recursed per character here and overflowed the stack (status 139).
  const std::string line = "NVRM: Xid (PCI:0000:17:00): 79, " + std::string(60000, 'x');
  const auto start = std::chrono::steady_clock::now();
  auto e = parse_xid_line(line);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 79u);
  EXPECT_EQ(e->gpu, "0000:17:00");
  EXPECT_LE(e->text.size(), 160u);
  EXPECT_TRUE(e->text.ends_with("..."));
  // A PCI address part that never closes, for the whole line.
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:17:00" + std::string(60000, ':')));
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:17:00): 99999999999999999999, too big"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(XidLine, ItsTextIsSanitized) {
  auto e = parse_xid_line("NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=\x1b[2J\x07py\xff, GPU has fallen off the bus.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, R"(NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=\u001b[2J\u0007py\xff, GPU has fallen off the bus.)");
  XidCheck check(XidPolicy::defaults(), 60s);
  ASSERT_TRUE(check.record(*e));
  auto r = check.judge(e->at + 1s);
  ASSERT_NO_THROW((void)r.to_json().dump());
  for (unsigned char c : r.to_json().dump()) EXPECT_TRUE(c >= 0x20 && c != 0x7f);
}
