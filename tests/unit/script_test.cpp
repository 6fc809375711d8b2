// Admin check scripts: the verdict from exit status and output, the deadline, the output bound, and
// the config.
#include <gtest/gtest.h>

#include "checks/script/script_check.hpp"
#include "checks/registry.hpp"
#include "checks/script/script_config.hpp"
#include "config/config.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
ScriptConfig sh(const std::string& name, const std::string& body, std::chrono::seconds timeout = 5s) {
  ScriptConfig c;
  c.name = name;
  c.command = {"/bin/sh", "-c", body};
  c.timeout = timeout;
  return c;
}
}  // namespace

TEST(ScriptCheck, ExitStatusIsTheVerdictAndTheFirstLineTheMessage) {
  auto r = ScriptCheck(sh("ib", "echo all good; exit 0")).run();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].check, "script:ib");
  EXPECT_EQ(r[0].status, Status::ok);

  r = ScriptCheck(sh("ib", "echo 'port 1 degraded'; echo detail; exit 1")).run();
  EXPECT_EQ(r[0].status, Status::warn);
  EXPECT_EQ(r[0].code, "SCRIPT-IB");
  EXPECT_EQ(r[0].message, "script ib: port 1 degraded");

  r = ScriptCheck(sh("ib_link", "echo 'port 1 down' >&2; exit 2")).run();
  EXPECT_EQ(r[0].status, Status::fault);
  EXPECT_EQ(r[0].action, Remedy::drain);
  EXPECT_EQ(r[0].code, "SCRIPT-IB-LINK");
  EXPECT_EQ(r[0].message, "script ib_link: port 1 down");
}

TEST(ScriptCheck, AnAdminMaySayAFailureOnlyWarns) {
  auto c = sh("slow-disk", "echo 'disk slow'; exit 2");
  c.action = Remedy::warn;
  auto r = ScriptCheck(c).run();
  EXPECT_EQ(r[0].status, Status::warn);
  EXPECT_EQ(r[0].action, Remedy::warn);
}

TEST(ScriptCheck, OtherExitsSignalsAndMissingProgramsAreABrokenScriptNotAFault) {
  auto r = ScriptCheck(sh("x", "echo oops; exit 3")).run();
  EXPECT_EQ(r[0].status, Status::error);
  EXPECT_EQ(r[0].message, "script x: broken: exit 3: oops");
  r = ScriptCheck(sh("x", "kill -9 $$")).run();
  EXPECT_EQ(r[0].status, Status::error);
  ScriptConfig missing;
  missing.name = "gone";
  missing.command = {"/nonexistent/check"};
  r = ScriptCheck(missing).run();
  EXPECT_EQ(r[0].status, Status::error);
  EXPECT_NE(r[0].message.find("/nonexistent/check"), std::string::npos) << r[0].message;
}

TEST(ScriptCheck, AHungScriptAndItsChildrenAreKilledAtTheDeadline) {
  auto start = std::chrono::steady_clock::now();
  auto r = ScriptCheck(sh("hang", "sleep 60 & sleep 60", 1s)).run();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_EQ(r[0].status, Status::error);
  EXPECT_NE(r[0].message.find("killed after its timeout of 1 s"), std::string::npos) << r[0].message;
}

TEST(ScriptCheck, OutputIsBoundedAndOneLineReachesTheMessage) {
  auto r = ScriptCheck(sh("chatty", "head -c 1000000 /dev/zero | tr '\\0' x; exit 1")).run();
  EXPECT_EQ(r[0].status, Status::warn);
  EXPECT_LE(r[0].message.size(), 220u);
}

TEST(ScriptConfig, ScriptsAreReadAndCheckedStrictly) {
  auto c = parse_config(R"(
[[checks.script]]
name = "ib"
command = ["/usr/lib/healthd/check-ib", "--port", "1"]
timeout_s = 20
interval_s = 600
action = "warn"
[[checks.script]]
name = "nfs"
command = ["/bin/true"]
)", "h.toml");
  ASSERT_TRUE(c) << c.error();
  ASSERT_EQ(c->section<ScriptsConfig>().scripts.size(), 2u);
  EXPECT_EQ(c->section<ScriptsConfig>().scripts[0].command, (std::vector<std::string>{"/usr/lib/healthd/check-ib", "--port", "1"}));
  EXPECT_EQ(c->section<ScriptsConfig>().scripts[0].timeout, 20s);
  EXPECT_EQ(c->section<ScriptsConfig>().scripts[0].interval, 600s);
  EXPECT_EQ(c->section<ScriptsConfig>().scripts[0].action, Remedy::warn);
  EXPECT_EQ(c->section<ScriptsConfig>().scripts[1].action, Remedy::drain);

  auto bad = parse_config("[[checks.script]]\nname = \"x\"\ncommand = \"/bin/check --all\"\n", "h.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("h.toml:3:"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("array of strings"), std::string::npos) << bad.error();
  bad = parse_config("[[checks.script]]\ncommand = [\"/bin/true\"]\n", "h.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("needs name and command"), std::string::npos) << bad.error();
  bad = parse_config("[checks.script]\nname = \"x\"\n", "h.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("array of tables"), std::string::npos) << bad.error();
}

TEST(ScriptCheck, InvalidUtf8AndControlCharactersInTheOutputGiveAValidResult) {
  // printf's octal escapes: bytes 0xff 0xfe, ESC and BEL. A strict dump() of the result threw.
  auto r = ScriptCheck(sh("ib", R"(printf 'port \377\376 \033[31mdown\007\n'; exit 1)")).run();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, Status::warn);
  EXPECT_EQ(r[0].message, R"(script ib: port \xff\xfe \u001b[31mdown\u0007)");
  std::string text;
  ASSERT_NO_THROW(text = r[0].to_json().dump());
  EXPECT_NE(text.find(R"(port \\xff\\xfe)"), std::string::npos) << text;
  // A long first line is cut at a code point within the bound.
  r = ScriptCheck(sh("ib", R"(i=0; while [ $i -lt 150 ]; do printf '\342\202\254'; i=$((i+1)); done; exit 1)")).run();
  EXPECT_LE(r[0].message.size(), std::string("script ib: ").size() + 200);
  EXPECT_TRUE(r[0].message.ends_with("...")) << r[0].message;
  EXPECT_NO_THROW((void)r[0].to_json().dump());
}
