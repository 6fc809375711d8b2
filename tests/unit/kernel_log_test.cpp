#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "checks/kernel_log/kernel_log_check.hpp"
#include "checks/registry.hpp"
#include "checks/kernel_log/kernel_log_config.hpp"
#include "collectors/kernel_log_reader.hpp"
#include "collectors/host_path.hpp"
#include "config/config.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
void append(const std::filesystem::path& f, const std::string& line) { std::ofstream(f, std::ios::app) << line << "\n"; }

struct LogFixture {
  ar::test::TempDir dir;
  std::filesystem::path log;
  KernelLogConfig config;
  LogFixture() {
    std::filesystem::create_directories(dir / "var/log");
    log = dir / "var/log/kern.log";
    std::ofstream(log) << "NVRM: Xid (PCI:0000:01:00): 79, an old line from before healthd started\n";
    config.path = "/var/log/kern.log";
    config.hold = 1s;
  }
};
}  // namespace

TEST(KernelLogMatcher, DefaultRulesNameTheCodeAndLeaveXidsToTheXidCheck) {
  KernelLogMatcher m(default_kernel_log_rules());
  EXPECT_EQ(m.match("mce: [Hardware Error]: CPU 3: Machine Check")->code, "KMSG-MCE");
  EXPECT_EQ(m.match("neuron: NEURON_HW_ERR=SRAM_UNCORRECTABLE")->code, "NEURON-HW-ERR");
  EXPECT_EQ(m.match("EXT4-fs error (device nvme1n1): ext4_find_entry")->code, "FS-IO-ERR");
  EXPECT_EQ(m.match("LustreError: 1234:0:(client.c:1181:ptlrpc_import_delay_req()) @@@ IMP_CLOSED rc = -5")->code, "FS-IO-ERR");
  EXPECT_EQ(m.match("XFS (nvme0n1): metadata I/O error in \"xfs_imap_to_bp\"")->code, "FS-IO-ERR");
  EXPECT_EQ(m.match("efa 0000:10:1c.0: Admin command timed out (cmd 3)")->code, "EFA-DRIVER-ERR");
  EXPECT_FALSE(m.match("efa 0000:10:1c.0: Setup irq:0x12 name:efa-mgmnt@pci:0000:10:1c.0"));
  EXPECT_FALSE(m.match("usb 1-1: new high-speed USB device"));
  EXPECT_FALSE(m.match("NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus."));
}

TEST(KernelLogCheck, TheLineHookTakesItsLinesBeforeTheRules) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  std::vector<std::string> taken;
  check.set_line_hook([&](const std::string& line) {
    if (line.find("NVRM: Xid") == std::string::npos) return KernelLogCheck::LineVerdict::not_mine;
    taken.push_back(line);
    return KernelLogCheck::LineVerdict::new_fault;
  });
  append(f.log, "NVRM: Xid (PCI:0000:17:00): 79, gone");
  EXPECT_TRUE(check.poll());  // the hook's new fault makes the node be judged now
  append(f.log, "mce: [Hardware Error]: x");
  EXPECT_TRUE(check.poll());
  EXPECT_EQ(taken.size(), 1u);
  EXPECT_EQ(check.run().at(0).code, "KMSG-MCE");
}

TEST(KernelLogMatcher, AdminRulesComeFirst) {
  std::vector<KernelLogRule> rules{{"MY-MCE", R"(mce: .*CPU 7\b)", Action::warn, "known flaky socket"}};
  auto d = default_kernel_log_rules();
  rules.insert(rules.end(), d.begin(), d.end());
  KernelLogMatcher m(rules);
  auto f = m.match("mce: [Hardware Error]: CPU 7");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "MY-MCE");
  EXPECT_EQ(f->message, "known flaky socket");
}

TEST(KernelLogCheck, OnlyNewLinesCountAndTheFaultHoldsThenClears) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path(), f.dir / "state.json");
  EXPECT_EQ(check.run().at(0).status, Status::ok);  // the old line is not a fault now
  append(f.log, "mce: [Hardware Error]: Machine check events logged");
  EXPECT_TRUE(check.poll());
  auto r = check.run().at(0);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "KMSG-MCE");
  EXPECT_EQ(r.action, Action::drain);
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(check.run().at(0).status, Status::ok);
}

TEST(KernelLogCheck, ABurstCountsOnce) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, "mce: [Hardware Error]: one");
  EXPECT_TRUE(check.poll());
  for (int i = 0; i < 50; ++i) append(f.log, "mce: [Hardware Error]: again");
  EXPECT_FALSE(check.poll());  // the same fault within its hold: not a new event
  auto r = check.run().at(0);
  EXPECT_EQ(r.detail["active"][0]["lines"], 51);
}

TEST(KernelLogCheck, AFaultIsNotExpiredBeforeASweepReportedIt) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, "mce: [Hardware Error]: x");
  EXPECT_TRUE(check.poll());
  std::this_thread::sleep_for(1200ms);  // the hold passes before any sweep ran
  EXPECT_EQ(check.run().at(0).status, Status::fault);
  EXPECT_EQ(check.run().at(0).status, Status::ok);
}

TEST(KernelLogCheck, ActiveFaultsSurviveARestart) {
  LogFixture f;
  f.config.hold = 60s;
  {
    KernelLogCheck check(f.config, f.dir.path(), f.dir / "state.json");
    append(f.log, "mce: [Hardware Error]: x");
    ASSERT_TRUE(check.poll());
  }
  KernelLogCheck again(f.config, f.dir.path(), f.dir / "state.json");
  auto r = again.run().at(0);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "KMSG-MCE");
}

TEST(KernelLogCheck, MissingLogIsABrokenCheckNotAFault) {
  LogFixture f;
  f.config.path = "/var/log/nope.log";
  KernelLogCheck check(f.config, f.dir.path());
  auto r = check.run().at(0);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_NE(r.message.find("nope.log"), std::string::npos);
}

TEST(KernelLogReader, PartialLinesWaitAndTruncationRestarts) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "old\n";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  std::ofstream(log, std::ios::app) << "first\nsecond-part";
  auto lines = reader.read_new();
  ASSERT_TRUE(lines);
  EXPECT_EQ(*lines, std::vector<std::string>{"first"});
  std::ofstream(log, std::ios::app) << "-done\n";
  EXPECT_EQ(*reader.read_new(), std::vector<std::string>{"second-part-done"});
  std::ofstream(log, std::ios::trunc) << "after truncation\n";
  EXPECT_EQ(*reader.read_new(), std::vector<std::string>{"after truncation"});
}

TEST(Config, PolicySlurmAndKernelLogRules) {
  auto c = parse_config(R"(
[daemon]
host_root = "/host"
[policy]
max_resumes = 5
max_drained_share = 0.25
[slurm]
timeout_s = 3
[checks.kernel_log]
hold_s = 30
[[checks.kernel_log.rule]]
code = "IB-DOWN"
pattern = "mlx5_core .*Link down"
action = "warn"
)", "f.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->host_root, "/host");
  EXPECT_EQ(c->policy.max_resumes, 5u);
  EXPECT_DOUBLE_EQ(c->policy.max_drained_share, 0.25);
  EXPECT_EQ(c->slurm.timeout.count(), 3);
  EXPECT_EQ(c->section<KernelLogConfig>().hold.count(), 30);
  ASSERT_EQ(c->section<KernelLogConfig>().rules.size(), 1u);
  EXPECT_EQ(c->section<KernelLogConfig>().rules[0].action, Action::warn);
  EXPECT_EQ(under_root(c->host_root, "/dev/kmsg"), "/host/dev/kmsg");
}

TEST(Config, BadRulesAreNamedWithTheirLine) {
  auto bad_regex = parse_config("[checks.kernel_log]\n[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = \"(\"\n", "f.toml");
  ASSERT_FALSE(bad_regex);
  EXPECT_NE(bad_regex.error().find("not a valid regex"), std::string::npos) << bad_regex.error();
  auto bad_key = parse_config("[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = \"x\"\nseverity = 1\n", "f.toml");
  ASSERT_FALSE(bad_key);
  EXPECT_NE(bad_key.error().find("f.toml:4:"), std::string::npos) << bad_key.error();
  EXPECT_NE(bad_key.error().find("'severity'"), std::string::npos);
  auto bad_action = parse_config("[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = \"x\"\naction = \"explode\"\n", "f.toml");
  ASSERT_FALSE(bad_action);
  auto bad_share = parse_config("[policy]\nmax_drained_share = 1.5\n", "f.toml");
  ASSERT_FALSE(bad_share);
  EXPECT_NE(bad_share.error().find("max_drained_share"), std::string::npos);
  auto unknown_check = parse_config("[checks.gpu_magic]\nenabled = true\n", "f.toml");
  ASSERT_FALSE(unknown_check);
  EXPECT_NE(unknown_check.error().find("[checks.gpu_magic]"), std::string::npos) << unknown_check.error();
}

// --- Outside text: invalid bytes, control characters, huge lines, hostile patterns (issue 10) ---

namespace {
// What `healthctl status` does with a check result: a strict dump() threw on invalid UTF-8 and
// ended the daemon's event loop.
std::string dumped(const CheckResult& r) { return r.to_json().dump(); }

void append_raw(const std::filesystem::path& f, const std::string& bytes) {
  std::ofstream(f, std::ios::app | std::ios::binary) << bytes;
}
}  // namespace

TEST(KernelLogCheck, InvalidUtf8InALineIsEscapedAndTheResultDumps) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path(), f.dir / "state.json");
  append(f.log, "mce: [Hardware Error]: bad \xff\xfe");
  ASSERT_TRUE(check.poll());
  auto r = check.run().at(0);
  EXPECT_EQ(r.code, "KMSG-MCE");
  EXPECT_EQ(r.message, R"(mce: [Hardware Error]: bad \xff\xfe)");
  std::string json;
  ASSERT_NO_THROW(json = dumped(r));
  EXPECT_NE(json.find(R"(bad \\xff\\xfe)"), std::string::npos) << json;
  // The fault was written to the state file (its dump did not throw either) and survives a restart.
  KernelLogCheck again(f.config, f.dir.path(), f.dir / "state.json");
  EXPECT_EQ(again.run().at(0).message, r.message);
}

TEST(KernelLogCheck, TerminalEscapesNeverReachTheMessage) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, "mce: [Hardware Error]: \x1b[31mCPU 3\x1b[0m\x07 machine check\x7f");
  ASSERT_TRUE(check.poll());
  auto r = check.run().at(0);
  ASSERT_EQ(r.code, "KMSG-MCE");
  for (unsigned char c : r.message) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << r.message;
  EXPECT_EQ(r.message, R"(mce: [Hardware Error]: \u001b[31mCPU 3\u001b[0m\u0007 machine check\u007f)");
  // The code built from a capture is sanitized too: it goes into the Slurm reason.
  KernelLogMatcher m({{"NIC-$1", R"(nic (\S+) down)", Action::drain, ""}});
  EXPECT_EQ(m.match("nic \x1b]0;owned\x07 down")->code, R"(NIC-\u001b]0;owned\u0007)");
}

TEST(KernelLogReader, AHugeLineIsCutMatchedOnItsHeadAndItsRestDropped) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  // 60,000 bytes, written in two pieces: the head is returned as soon as it is there.
  const std::string line = "LustreError: 11-0: rc = -5 " + std::string(59973, 'x');
  append_raw(log, line.substr(0, 30000));
  auto first = reader.read_new();
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(first->at(0).size(), KernelLogReader::kMaxLineBytes);
  EXPECT_TRUE(first->at(0).starts_with("LustreError: 11-0: rc = -5 xxx"));
  append_raw(log, line.substr(30000) + "\nnext line\n");
  EXPECT_EQ(*reader.read_new(), std::vector<std::string>{"next line"});  // the rest is skipped
}

TEST(KernelLogReader, ACutNeverSplitsACodePoint) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  // "€" (3 bytes) straddles the 4096-byte cap.
  append_raw(log, std::string(KernelLogReader::kMaxLineBytes - 1, 'a') + "€€€\n");
  auto lines = reader.read_new();
  ASSERT_TRUE(lines);
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ(lines->at(0), std::string(KernelLogReader::kMaxLineBytes - 1, 'a'));
}

TEST(KernelLogReader, OneReadIsBoundedAndTheRestComesNext) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  const std::string line(1023, 'l');  // 1 KiB with its newline
  std::string many;
  for (int i = 0; i < 1536; ++i) many += line + "\n";  // 1.5 MiB
  append_raw(log, many);
  auto first = reader.read_new();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->size(), 1024u);
  EXPECT_EQ(reader.read_new()->size(), 512u);
}

TEST(KernelLogCheck, A60000ByteLineIsMatchedOnItsHead) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, "LustreError: 1234:0:(client.c:1181) rc = -5 " + std::string(60000, 'A'));
  ASSERT_TRUE(check.poll());
  auto r = check.run().at(0);
  EXPECT_EQ(r.code, "FS-IO-ERR");
  EXPECT_LE(r.message.size(), 160u);
  EXPECT_TRUE(r.message.ends_with("...")) << r.message;
  // The pathological shape std::regex recursed on, as one long line: no crash, no match.
  append(f.log, "LustreError: " + std::string(60000, '('));
  EXPECT_FALSE(check.poll());
}

TEST(KernelLogMatcher, ABacktrackingPatternStaysLinear) {
  // std::regex took 116 s on this (exponential backtracking); RE2 is linear in the line.
  KernelLogMatcher m({{"CATASTROPHIC", "(a+)+$", Action::warn, ""}});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(m.match("aaaaaaaaaaaaaaaaaaaaaaaaaa!"));
  EXPECT_FALSE(m.match(std::string(60000, 'a') + "!"));
  EXPECT_TRUE(m.match(std::string(60000, 'a')));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(KernelLogCheck, TheWatcherThreadPollsAndCallsBackOnANewFault) {
  LogFixture f;
  f.config.poll_interval = 20ms;
  KernelLogCheck check(f.config, f.dir.path());
  std::mutex m;
  std::condition_variable cv;
  int calls = 0;
  check.start([&](const std::string&) {
    std::lock_guard lock(m);
    ++calls;
    cv.notify_all();
  });
  append(f.log, "mce: [Hardware Error]: on the watcher thread");
  std::unique_lock lock(m);
  EXPECT_TRUE(cv.wait_for(lock, 10s, [&] { return calls > 0; }));
  lock.unlock();
  check.stop();  // joins: returns within a poll interval
  EXPECT_EQ(check.run().at(0).code, "KMSG-MCE");
}

TEST(Config, RulePatternsAreCheckedByRe2WithTheirPosition) {
  // RE2 has no backreferences: refused at load, with file:line:column and RE2's reason.
  auto backref = parse_config("[checks.kernel_log]\n[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = '(a)\\1'\n", "f.toml");
  ASSERT_FALSE(backref);
  EXPECT_NE(backref.error().find("f.toml:2:1: rule X:"), std::string::npos) << backref.error();  // the rule's table
  EXPECT_NE(backref.error().find("RE2"), std::string::npos) << backref.error();
  EXPECT_NE(backref.error().find("escape"), std::string::npos) << backref.error();
  auto lookahead = parse_config("[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = 'a(?=b)'\n", "f.toml");
  ASSERT_FALSE(lookahead);
  // The pathological pattern is accepted: it cannot hurt anymore.
  auto ok = parse_config("[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = '(a+)+$'\n", "f.toml");
  EXPECT_TRUE(ok) << ok.error();
}

// A reload rebuilds the check: the new one opens the log at its end, so a line written after the
// old one's last read would be lost without the hand-over of the old reader (review of issue 14).
TEST(KernelLogCheck, ARebuiltCheckTakesOverTheOldReadPositionAndFaults) {
  LogFixture f;
  KernelLogCheck old(f.config, f.dir.path());
  old.poll();
  append(f.log, "mce: [Hardware Error]: CPU 3: Machine Check: seen by the old check");
  old.poll();
  append(f.log, "EXT4-fs error (device nvme1n1): ext4_find_entry: written during the reload");
  old.stop();
  KernelLogCheck rebuilt(f.config, f.dir.path());  // opens the log at its end
  rebuilt.carry_over(old);
  auto results = rebuilt.run();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, Status::fault);
  const auto text = results[0].to_json().dump();
  EXPECT_NE(text.find("KMSG-MCE"), std::string::npos) << text;   // the old check's fault, carried
  EXPECT_NE(text.find("FS-IO-ERR"), std::string::npos) << text;  // the line no check had read yet
}

TEST(KernelLogCheck, ARebuiltCheckOfAnotherLogKeepsItsOwnReader) {
  LogFixture f;
  KernelLogCheck old(f.config, f.dir.path());
  append(f.log, "EXT4-fs error (device nvme1n1): ext4_find_entry: in the old log");
  std::ofstream(f.dir / "var/log/other.log") << "";
  auto other = f.config;
  other.path = "/var/log/other.log";
  KernelLogCheck rebuilt(other, f.dir.path());
  rebuilt.carry_over(old);
  append(f.dir / "var/log/other.log", "mce: [Hardware Error]: CPU 3: Machine Check");
  const auto text = rebuilt.run()[0].to_json().dump();
  EXPECT_NE(text.find("KMSG-MCE"), std::string::npos) << text;
  EXPECT_EQ(text.find("FS-IO-ERR"), std::string::npos) << text;
}

TEST(KernelLogCheck, AnAdminsClearForgetsOneFaultAndItsSavedState) {
  LogFixture f;
  f.config.hold = 3600s;  // without the clear it would stand for an hour
  KernelLogCheck check(f.config, f.dir.path(), f.dir / "state.json");
  append(f.log, "mce: [Hardware Error]: Machine check events logged");
  ASSERT_TRUE(check.poll());
  ASSERT_EQ(check.run().at(0).code, "KMSG-MCE");
  EXPECT_FALSE(check.clear("KMSG-OOM")) << "a code it does not hold";
  EXPECT_TRUE(check.clear("KMSG-MCE"));
  EXPECT_EQ(check.run().at(0).status, Status::ok);
  KernelLogCheck restarted(f.config, f.dir.path(), f.dir / "state.json");
  EXPECT_EQ(restarted.run().at(0).status, Status::ok) << "a restart does not bring a cleared fault back";
}
