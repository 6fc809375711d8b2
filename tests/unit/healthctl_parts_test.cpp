// healthctl's parts below the tables: the exit-code mapping, which daemon to ask, when to colour,
// how wide to be, text cutting and times.
#include <cstdlib>
#include <ctime>
#include <optional>

#include <gtest/gtest.h>

#include "zone_guard.hpp"
#include <nlohmann/json.hpp>

#include "clock_text.hpp"
#include "daemon_client.hpp"
#include "exit_codes.hpp"
#include "socket_path.hpp"
#include "terminal.hpp"
#include "text.hpp"

using nlohmann::json;
using namespace ar::healthctl;

namespace {

constexpr std::int64_t kPartsNow = 1795961002000;  // 2026-11-29 14:03:22 UTC

using ar::test::ZoneGuard;

json health_of(std::initializer_list<const char*> statuses, bool faulty = false) {
  json checks = json::array();
  for (const char* s : statuses) checks.push_back({{"check", "x"}, {"status", s}});
  return {{"node", {{"faulty", faulty}}}, {"checks", checks}};
}

}  // namespace

// ---- exit codes -----------------------------------------------------------------------------------

TEST(HealthctlExit, EachOutcomeHasItsNumber) {
  EXPECT_EQ(exit_code(Outcome::healthy), 0);
  EXPECT_EQ(exit_code(Outcome::warnings), 1);
  EXPECT_EQ(exit_code(Outcome::faulty), 2);
  EXPECT_EQ(exit_code(Outcome::unreachable), 3);
  EXPECT_EQ(exit_code(Outcome::refused), 4);
  EXPECT_EQ(exit_code(Outcome::conflict), 5);
  EXPECT_EQ(exit_code(Outcome::usage), 64);
}

TEST(HealthctlExit, HealthIsTheWorstResult) {
  EXPECT_EQ(health_outcome(health_of({"ok", "ok"})), Outcome::healthy);
  EXPECT_EQ(health_outcome(health_of({"ok", "warn"})), Outcome::warnings);
  // a check that could not run says nothing about the node, but someone should look
  EXPECT_EQ(health_outcome(health_of({"ok", "error"})), Outcome::warnings);
  EXPECT_EQ(health_outcome(health_of({"warn", "fault", "error"})), Outcome::faulty);
  EXPECT_EQ(health_outcome(health_of({"fault", "ok"})), Outcome::faulty);
  // a node still held faulty (its healthy passes not yet done) is faulty, whatever the checks say now
  EXPECT_EQ(health_outcome(health_of({"ok"}, /*faulty=*/true)), Outcome::faulty);
  EXPECT_EQ(health_outcome(json::object()), Outcome::healthy);
  EXPECT_EQ(health_outcome(json{{"checks", "nonsense"}, {"node", 3}}), Outcome::healthy);
}

TEST(HealthctlExit, GpusHealthIsTheWorstGpu) {
  EXPECT_EQ(gpus_outcome(json::array()), Outcome::healthy);
  EXPECT_EQ(gpus_outcome(json::array({{{"health", "ok"}}, {{"health", "warn"}}})), Outcome::warnings);
  EXPECT_EQ(gpus_outcome(json::array({{{"health", "fault"}}, {{"health", "warn"}}})), Outcome::faulty);
  EXPECT_EQ(gpus_outcome(json::array({{{"health", "error"}}})), Outcome::warnings);
}

TEST(HealthctlExit, RefusalsConflictsAndSilenceAreTold) {
  EXPECT_EQ(error_outcome("forbidden"), Outcome::refused);
  EXPECT_EQ(error_outcome("busy"), Outcome::refused);
  EXPECT_EQ(error_outcome("conflict"), Outcome::conflict);
  EXPECT_EQ(error_outcome("internal"), Outcome::unreachable);
  EXPECT_EQ(error_outcome("unknown_type"), Outcome::unreachable);

  CallError refused{true, "forbidden", "an on-demand check is for root only"};
  EXPECT_EQ(refused.outcome(), Outcome::refused);
  EXPECT_EQ(refused.describe("/run/healthd/healthd.sock"), "refused: an on-demand check is for root only (forbidden)");
  CallError silent{false, {}, "connect /x.sock: No such file or directory"};
  EXPECT_EQ(silent.outcome(), Outcome::unreachable);
  EXPECT_EQ(silent.describe("/x.sock"), "healthd at /x.sock is not answering: connect /x.sock: No such file or directory");
}

TEST(HealthctlExit, NoDaemonIsUnreachable) {
  auto r = call_daemon("/nonexistent/healthctl-test.sock", json{{"v", 1}, {"type", "ping"}}, std::chrono::milliseconds(100));
  ASSERT_FALSE(r);
  EXPECT_FALSE(r.error().answered);
  EXPECT_EQ(r.error().outcome(), Outcome::unreachable);
}

// ---- which daemon ---------------------------------------------------------------------------------

TEST(HealthctlSocket, FlagThenNodeThenEnvironmentThenDefault) {
  SocketChoice c;
  c.short_hostname = "n1";
  EXPECT_EQ(choose_socket(c).value(), "/run/healthd/healthd.sock");
  c.socket_env = "/tmp/env.sock";
  EXPECT_EQ(choose_socket(c).value(), "/tmp/env.sock");
  c.node_flag = "n1";  // this host: the default socket, not $HEALTHD_SOCKET
  EXPECT_EQ(choose_socket(c).value(), "/run/healthd/healthd.sock");
  c.template_env = "/run/healthd/%n.sock";
  c.node_flag = "n2";
  EXPECT_EQ(choose_socket(c).value(), "/run/healthd/n2.sock");
  c.socket_flag = "/tmp/flag.sock";
  EXPECT_EQ(choose_socket(c).value(), "/tmp/flag.sock");
}

TEST(HealthctlSocket, AnotherNodeWithoutATemplateOrABadNameIsAUsageError) {
  SocketChoice c;
  c.short_hostname = "n1";
  c.node_flag = "n2";
  auto r = choose_socket(c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("HEALTHD_SOCKET_TEMPLATE"), std::string::npos);
  c.template_env = "/run/healthd/%n.sock";
  for (const char* bad : {"../etc", "a/b", "", ".hidden", "n1\nx"}) {
    c.node_flag = bad;
    EXPECT_FALSE(choose_socket(c)) << bad;
  }
  c.node_flag = "n2";
  c.template_env = "/run/healthd/fixed.sock";  // no %n: every node would be the same daemon
  EXPECT_FALSE(choose_socket(c));
}

// ---- the terminal ---------------------------------------------------------------------------------

TEST(HealthctlTerminal, ColourOnlyForATtyWithoutNoColor) {
  EXPECT_TRUE(want_color(true, false, nullptr, "xterm-256color"));
  EXPECT_FALSE(want_color(false, false, nullptr, "xterm"));   // a pipe, a file
  EXPECT_FALSE(want_color(true, true, nullptr, "xterm"));     // --no-color
  EXPECT_FALSE(want_color(true, false, "1", "xterm"));        // NO_COLOR
  EXPECT_FALSE(want_color(true, false, "", "xterm"));         // set, even empty
  EXPECT_FALSE(want_color(true, false, nullptr, "dumb"));
  EXPECT_TRUE(want_color(true, false, nullptr, nullptr));
}

TEST(HealthctlTerminal, WidthFromColumnsThenTheTtyAndNoLimitForAPipe) {
  EXPECT_EQ(output_width(nullptr, true, 0), 80u);  // a terminal that does not say
  EXPECT_EQ(output_width(nullptr, true, 132), 132u);
  EXPECT_EQ(output_width("100", true, 132), 100u);
  EXPECT_EQ(output_width("abc", true, 132), 132u);
  EXPECT_EQ(output_width(nullptr, false, 0), 0u);  // a pipe, a file: nothing is cut
  EXPECT_EQ(output_width("", false, 0), 0u);
  EXPECT_EQ(output_width("80", false, 0), 80u);    // unless asked
  EXPECT_EQ(output_width("10", true, 0), 40u);     // nothing fits narrower
}

TEST(HealthctlTerminal, EllipsisFollowsTheLocale) {
  EXPECT_EQ(ellipsis_for("UTF-8"), "\u2026");
  EXPECT_EQ(ellipsis_for("ANSI_X3.4-1968"), "...");
  EXPECT_EQ(ellipsis_for(nullptr), "...");
}

// ---- text -----------------------------------------------------------------------------------------

TEST(HealthctlText, FitCutsAtCodePointsWithTheEllipsis) {
  EXPECT_EQ(fit("short", 10, "..."), "short");
  EXPECT_EQ(fit("0123456789abc", 10, "..."), "0123456...");
  EXPECT_EQ(fit("0123456789abc", 10, "\u2026"), "012345678\u2026");
  EXPECT_EQ(display_width(fit("\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", 4, "\u2026")), 4u);
  EXPECT_EQ(fit("\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", 4, "\u2026"), "\u00e9\u00e9\u00e9\u2026");
  EXPECT_EQ(fit("word word word", 11, "\u2026"), "word word\u2026");  // no gap before the mark
  EXPECT_EQ(fit("anything", 0, "..."), "anything");  // no limit
}

TEST(HealthctlText, PrintableReplacesControlsAndBadBytes) {
  EXPECT_EQ(printable("ok text \u00e9"), "ok text \u00e9");
  EXPECT_EQ(printable("a\x1b[2Jb"), "a?[2Jb");
  EXPECT_EQ(printable("tab\there"), "tab here");
  EXPECT_EQ(printable("c1 \xc2\x9b x"), "c1 ? x");
  EXPECT_EQ(printable("bad \xff\xfe"), "bad ??");
  EXPECT_EQ(printable("rtl \u202e txt"), "rtl ? txt");
  EXPECT_EQ(printable("cut \xe2\x80"), "cut ??");
}

TEST(HealthctlText, WrapKeepsEveryWord) {
  const auto lines = wrap("one two three four five six", 9);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "one two");
  EXPECT_EQ(lines[1], "three");
  EXPECT_EQ(lines[2], "four five");
  EXPECT_EQ(lines[3], "six");
  const auto pieces = wrap("x abcdefghijklmnop", 5);
  ASSERT_EQ(pieces.size(), 5u);
  for (const auto& l : pieces) EXPECT_LE(display_width(l), 5u) << l;
  EXPECT_EQ(wrap("", 5), std::vector<std::string>{""});
}

TEST(HealthctlText, ShortenPathKeepsItsEnd) {
  EXPECT_EQ(shorten_path("/etc/healthd/healthd.toml", 40, "\u2026"), "/etc/healthd/healthd.toml");
  const auto s = shorten_path("/tmp/ar-cluster-0123abcd/run/deep/deeper/healthd-n1.sock", 30, "\u2026");
  EXPECT_LE(display_width(s), 30u) << s;
  EXPECT_EQ(s, "/tmp/\u2026/deeper/healthd-n1.sock");
  const auto tiny = shorten_path("/tmp/a/very-long-socket-file-name-that-alone-is-too-long.sock", 20, "...");
  EXPECT_LE(display_width(tiny), 20u) << tiny;
}

// ---- times ----------------------------------------------------------------------------------------

TEST(HealthctlClock, WhenIsAnAgeTodayATimeElseADate) {
  ZoneGuard utc("UTC");
  EXPECT_EQ(when(kPartsNow - 12000, kPartsNow), "12s ago");
  EXPECT_EQ(when(kPartsNow - 5 * 60000, kPartsNow), "5m ago");
  EXPECT_EQ(when(kPartsNow - 2 * 3600000, kPartsNow), "12:03:22");
  EXPECT_EQ(when(kPartsNow - 15 * 3600000, kPartsNow), "11-28 23:03:22");
  EXPECT_EQ(when(kPartsNow - 15 * 3600000, kPartsNow, /*full_date=*/true), "2026-11-28 23:03:22");
  EXPECT_EQ(when(0, kPartsNow), "-");
  EXPECT_EQ(local_datetime(kPartsNow + 7, true), "2026-11-29 14:03:22.007");
  EXPECT_EQ(utc_offset(kPartsNow), "+00:00");
}

TEST(HealthctlClock, TodayIsTheLocalDay) {
  ZoneGuard tokyo("Asia/Tokyo");  // 23:03:22 there: 10 h earlier is still today
  EXPECT_EQ(when(kPartsNow - 10 * 3600000, kPartsNow), "13:03:22");
  EXPECT_EQ(utc_offset(kPartsNow), "+09:00");
}

TEST(HealthctlClock, AgesAndSpans) {
  EXPECT_EQ(age(kPartsNow - 3 * 3600000, kPartsNow), "3h ago");
  EXPECT_EQ(age(kPartsNow - 50 * 3600000, kPartsNow), "2d ago");
  EXPECT_EQ(age(kPartsNow + 60000, kPartsNow), "in the future");
  EXPECT_EQ(span(45), "45s");
  EXPECT_EQ(span(725), "12m 05s");
  EXPECT_EQ(span(93784), "1d 02h");
}
