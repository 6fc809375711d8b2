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

// A record of the kernel's own (facility 0) at `level`, as the reader hands it over.
KernelRecord kern(int level, std::string text) {
  KernelRecord r;
  r.level = level;
  r.facility = kFacilityKernel;
  r.text = std::move(text);
  return r;
}

// The texts of what a reader returned.
std::vector<std::string> texts(const std::expected<std::vector<KernelRecord>, std::string>& records) {
  std::vector<std::string> out;
  if (!records) return {"error: " + records.error()};
  for (const auto& r : *records) out.push_back(r.text);
  return out;
}

// What the drivers write, with the level they write it at (docs/checks.md).
const std::string kMce = "<0>mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400";
const std::string kExt4 = "<2>EXT4-fs error (device nvme1n1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0";

struct LogFixture {
  ar::test::TempDir dir;
  std::filesystem::path log;
  KernelLogConfig config;
  LogFixture() {
    std::filesystem::create_directories(dir / "var/log");
    log = dir / "var/log/kern.log";
    std::ofstream(log) << "<4>NVRM: Xid (PCI:0000:01:00): 79, an old line from before healthd started\n";
    config.path = "/var/log/kern.log";
    config.hold = 1s;
  }
};
}  // namespace

TEST(KernelLogMatcher, DefaultRulesNameTheCodeAndLeaveXidsToTheXidCheck) {
  KernelLogMatcher m(default_kernel_log_rules());
  EXPECT_EQ(m.match(kern(0, "mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400"))->code, "KMSG-MCE");
  EXPECT_EQ(m.match(kern(3, "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0592464924bd45322 nd-id=0 nc-id=0 action=TERMINATE_INSTANCE"))->code,
            "NEURON-HW-ERR");
  EXPECT_EQ(m.match(kern(3, "2024-05-01T10:00:00Z NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR nd-id=0"))->code, "NEURON-HW-ERR");
  EXPECT_EQ(m.match(kern(2, "EXT4-fs error (device nvme1n1): ext4_find_entry"))->code, "FS-IO-ERR");
  EXPECT_EQ(m.match(kern(3, "LustreError: 1234:0:(client.c:1181:ptlrpc_import_delay_req()) @@@ IMP_CLOSED rc = -5"))->code, "FS-IO-ERR");
  EXPECT_EQ(m.match(kern(1, "XFS (nvme0n1): metadata I/O error in \"xfs_imap_to_bp\""))->code, "FS-IO-ERR");
  EXPECT_EQ(m.match(kern(3, "Buffer I/O error on dev nvme1n1, logical block 0, async page read"))->code, "FS-IO-ERR");
  EXPECT_EQ(m.match(kern(3, "block nvme1n1: Buffer I/O error on dev nvme1n1p1, logical block 0"))->code, "FS-IO-ERR");
  EXPECT_EQ(m.match(kern(3, "efa 0000:10:1c.0: Admin command timed out (cmd 3)"))->code, "EFA-DRIVER-ERR");
  EXPECT_EQ(m.match(kern(3, "efa 0000:10:1c.0 efa_0: Device reset required"))->code, "EFA-DRIVER-ERR");  // ibdev_err's form
  EXPECT_FALSE(m.match(kern(3, "efa 0000:10:1c.0: Setup irq:0x12 name:efa-mgmnt@pci:0000:10:1c.0")));
  EXPECT_FALSE(m.match(kern(3, "usb 1-1: new high-speed USB device")));
  EXPECT_FALSE(m.match(kern(4, "NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.")));
}

// Issue 31: any user can put a driver's text into the kernel log. The kernel's report of a crashed
// program names the file it crashed in (KERN_INFO); a write to /dev/kmsg is LOG_USER. Neither counts.
TEST(KernelLogMatcher, TextAUserCanPutIntoTheLogNeverMatchesADefaultRule) {
  KernelLogMatcher m(default_kernel_log_rules());
  const std::string mce = "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400";
  ASSERT_TRUE(m.match(kern(0, mce)));
  // The segfault report: kernel facility, KERN_INFO, the name further in.
  auto segfault = kern(6, "a.out[1234]: segfault at 0 ip 00007f0c sp 00007ffd error 14 in " + mce + "[7f0c+1000]");
  EXPECT_FALSE(m.match(segfault));
  segfault.level = 0;  // at any level: the name is not where the driver's prefix is
  EXPECT_FALSE(m.match(segfault));
  // The same text at the start of a record, but at KERN_INFO (no driver writes its fault there).
  EXPECT_FALSE(m.match(kern(6, mce)));
  // Written to /dev/kmsg as "<0>mce: ...": the kernel keeps the level, the facility is LOG_USER.
  auto user = kern(0, mce);
  user.facility = kFacilityUser;
  EXPECT_FALSE(m.match(user));
  for (const auto* text : {"EXT4-fs error (device sda)", "LustreError: rc = -5", "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR",
                           "efa 0000:10:1c.0: Admin command timed out", "XFS (sda): Corruption detected", "Buffer I/O error on dev sda"}) {
    auto r = kern(3, text);
    ASSERT_TRUE(m.match(r)) << text;
    r.facility = kFacilityUser;
    EXPECT_FALSE(m.match(r)) << text;
    EXPECT_FALSE(m.match(kern(3, std::string("python3[99]: segfault at 0 ip 0 sp 0 error 4 in ") + text))) << text;
    EXPECT_FALSE(m.match(kern(6, text))) << text;
  }
  // A task name leading a KERN_WARNING message (ipc/shm: "%s (%d): Using mlock ulimits for
  // SHM_HUGETLB is obsolete"): "EXT4-fs error" fits in a task's 15-character name, but ext4 writes
  // its errors at KERN_CRIT.
  EXPECT_FALSE(m.match(kern(4, "EXT4-fs error (4242): Using mlock ulimits for SHM_HUGETLB is obsolete")));
  // "Machine check events logged" is KERN_INFO, and written for corrected errors too.
  EXPECT_FALSE(m.match(kern(6, "mce: [Hardware Error]: Machine check events logged")));
}

TEST(KernelLogCheck, TheLineHookTakesItsLinesBeforeTheRules) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  std::vector<std::string> taken;
  check.set_line_hook([&](const KernelRecord& record) {
    if (!record.text.starts_with("NVRM: Xid")) return KernelLogCheck::LineVerdict::not_mine;
    taken.push_back(record.text);
    return KernelLogCheck::LineVerdict::new_fault;
  });
  append(f.log, "<4>NVRM: Xid (PCI:0000:17:00): 79, gone");
  EXPECT_TRUE(check.poll());  // the hook's new fault makes the node be judged now
  append(f.log, kMce);
  EXPECT_TRUE(check.poll());
  EXPECT_EQ(taken.size(), 1u);
  EXPECT_EQ(check.run().at(0).code, "KMSG-MCE");
}

TEST(KernelLogCheck, ANotifyOnlyRuleKeepsTheNodeAndSaysSo) {
  LogFixture f;
  auto c = parse_config("[[checks.kernel_log.rule]]\ncode = \"IB-LINK-DOWN\"\npattern = 'mlx5_core [0-9a-f:.]+ \\S+: Link down'\n"
                        "action = \"notify_only\"\n[[policy.hook]]\nname = \"ticket\"\non = [\"notify_only\"]\n"
                        "command = [\"/usr/local/bin/ticket\"]\n",
                        "f.toml");
  ASSERT_TRUE(c) << c.error();
  ASSERT_EQ(c->policy.hooks.size(), 1u);
  EXPECT_EQ(c->policy.hooks[0].on, std::vector<Action>{Action::notify_only});
  f.config.rules = c->section<KernelLogConfig>().rules;
  ASSERT_EQ(f.config.rules.size(), 1u);
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, "<3>mlx5_core 0000:01:00.0 ib0: Link down");
  check.poll();
  const auto r = check.run().at(0);
  EXPECT_EQ(r.code, "IB-LINK-DOWN");
  EXPECT_EQ(r.action, Remedy::notify_only);
  EXPECT_EQ(r.status, Status::warn);  // not a fault: the node stays in service
}

TEST(KernelLogMatcher, AdminRulesComeFirst) {
  std::vector<KernelLogRule> rules{{"MY-MCE", R"(mce: .*CPU 7\b)", Remedy::warn, "known flaky socket"}};
  auto d = default_kernel_log_rules();
  rules.insert(rules.end(), d.begin(), d.end());
  KernelLogMatcher m(rules);
  auto f = m.match(kern(0, "mce: [Hardware Error]: CPU 7"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "MY-MCE");
  EXPECT_EQ(f->message, "known flaky socket");
}

TEST(KernelLogCheck, OnlyNewLinesCountAndTheFaultHoldsThenClears) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path(), f.dir / "state.json");
  EXPECT_EQ(check.run().at(0).status, Status::ok);  // the old line is not a fault now
  append(f.log, kMce);
  EXPECT_TRUE(check.poll());
  auto r = check.run().at(0);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "KMSG-MCE");
  EXPECT_EQ(r.action, Remedy::drain);
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(check.run().at(0).status, Status::ok);
}

TEST(KernelLogCheck, ABurstCountsOnce) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, "<0>mce: [Hardware Error]: one");
  EXPECT_TRUE(check.poll());
  for (int i = 0; i < 50; ++i) append(f.log, "<0>mce: [Hardware Error]: again");
  EXPECT_FALSE(check.poll());  // the same fault within its hold: not a new event
  auto r = check.run().at(0);
  EXPECT_EQ(r.detail["active"][0]["lines"], 51);
}

TEST(KernelLogCheck, AFaultIsNotExpiredBeforeASweepReportedIt) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, kMce);
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
    append(f.log, kMce);
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
  std::ofstream(log) << "<6>old\n";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  std::ofstream(log, std::ios::app) << "<6>first\n<6>second-part";
  EXPECT_EQ(texts(reader.read_new()), std::vector<std::string>{"first"});
  std::ofstream(log, std::ios::app) << "-done\n";
  EXPECT_EQ(texts(reader.read_new()), std::vector<std::string>{"second-part-done"});
  std::ofstream(log, std::ios::trunc) << "<6>after truncation\n";
  EXPECT_EQ(texts(reader.read_new()), std::vector<std::string>{"after truncation"});
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
  EXPECT_EQ(c->section<KernelLogConfig>().rules[0].action, Remedy::warn);
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
  append(f.log, "<0>mce: [Hardware Error]: bad \xff\xfe");
  ASSERT_TRUE(check.poll());
  auto r = check.run().at(0);
  EXPECT_EQ(r.code, "KMSG-MCE");
  EXPECT_EQ(r.message, R"(mce: [Hardware Error]: bad \xff\xfe)");
  std::string text;
  ASSERT_NO_THROW(text = dumped(r));
  EXPECT_NE(text.find(R"(bad \\xff\\xfe)"), std::string::npos) << text;
  // The fault was written to the state file (its dump did not throw either) and survives a restart.
  KernelLogCheck again(f.config, f.dir.path(), f.dir / "state.json");
  EXPECT_EQ(again.run().at(0).message, r.message);
}

TEST(KernelLogCheck, TerminalEscapesNeverReachTheMessage) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  append(f.log, "<0>mce: [Hardware Error]: \x1b[31mCPU 3\x1b[0m\x07 machine check\x7f");
  ASSERT_TRUE(check.poll());
  auto r = check.run().at(0);
  ASSERT_EQ(r.code, "KMSG-MCE");
  for (unsigned char c : r.message) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << r.message;
  EXPECT_EQ(r.message, R"(mce: [Hardware Error]: \u001b[31mCPU 3\u001b[0m\u0007 machine check\u007f)");
  // The code built from a capture is sanitized too: it goes into the Slurm reason.
  KernelLogMatcher m({{"NIC-$1", R"(nic (\S+) down)", Remedy::drain, ""}});
  EXPECT_EQ(m.match(kern(3, "nic \x1b]0;owned\x07 down"))->code, R"(NIC-\u001b]0;owned\u0007)");
}

TEST(KernelLogReader, AHugeLineIsCutMatchedOnItsHeadAndItsRestDropped) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  // 60,000 bytes, written in two pieces: the head is returned as soon as it is there.
  const std::string line = "<3>LustreError: 11-0: rc = -5 " + std::string(59970, 'x');
  append_raw(log, line.substr(0, 30000));
  auto first = reader.read_new();
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(first->at(0).level, 3);
  EXPECT_EQ(first->at(0).text.size(), KernelLogReader::kMaxLineBytes - 3);  // the line's head, less its priority
  EXPECT_TRUE(first->at(0).text.starts_with("LustreError: 11-0: rc = -5 xxx"));
  append_raw(log, line.substr(30000) + "\n<6>next line\n");
  EXPECT_EQ(texts(reader.read_new()), std::vector<std::string>{"next line"});  // the rest is skipped
}

TEST(KernelLogReader, ACutNeverSplitsACodePoint) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  // "€" (3 bytes) straddles the 4096-byte cap.
  append_raw(log, "<6>" + std::string(KernelLogReader::kMaxLineBytes - 4, 'a') + "€€€\n");
  EXPECT_EQ(texts(reader.read_new()), std::vector<std::string>{std::string(KernelLogReader::kMaxLineBytes - 4, 'a')});
}

TEST(KernelLogReader, OneReadIsBoundedAndTheRestComesNext) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  const std::string line = "<6>" + std::string(1020, 'l');  // 1 KiB with its newline
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
  append(f.log, "<3>LustreError: 1234:0:(client.c:1181) rc = -5 " + std::string(60000, 'A'));
  ASSERT_TRUE(check.poll());
  auto r = check.run().at(0);
  EXPECT_EQ(r.code, "FS-IO-ERR");
  EXPECT_LE(r.message.size(), 160u);
  EXPECT_TRUE(r.message.ends_with("...")) << r.message;
  // The pathological shape std::regex recursed on, as one long line: no crash, no match.
  append(f.log, "<3>LustreError: " + std::string(60000, '('));
  EXPECT_FALSE(check.poll());
}

TEST(KernelLogMatcher, ABacktrackingPatternStaysLinear) {
  // std::regex took 116 s on this (exponential backtracking); RE2 is linear in the line.
  KernelLogMatcher m({{"CATASTROPHIC", "(a+)+$", Remedy::warn, ""}});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(m.match(kern(3, "aaaaaaaaaaaaaaaaaaaaaaaaaa!")));
  EXPECT_FALSE(m.match(kern(3, std::string(60000, 'a') + "!")));
  EXPECT_TRUE(m.match(kern(3, std::string(60000, 'a'))));
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
  append(f.log, "<0>mce: [Hardware Error]: on the watcher thread");
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
  append(f.log, "<0>mce: [Hardware Error]: CPU 3: Machine Check: seen by the old check");
  old.poll();
  append(f.log, "<2>EXT4-fs error (device nvme1n1): ext4_find_entry: written during the reload");
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
  append(f.log, kExt4);
  std::ofstream(f.dir / "var/log/other.log") << "";
  auto other = f.config;
  other.path = "/var/log/other.log";
  KernelLogCheck rebuilt(other, f.dir.path());
  rebuilt.carry_over(old);
  append(f.dir / "var/log/other.log", kMce);
  const auto text = rebuilt.run()[0].to_json().dump();
  EXPECT_NE(text.find("KMSG-MCE"), std::string::npos) << text;
  EXPECT_EQ(text.find("FS-IO-ERR"), std::string::npos) << text;
}

TEST(KernelLogCheck, AnAdminsClearForgetsOneFaultAndItsSavedState) {
  LogFixture f;
  f.config.hold = 3600s;  // without the clear it would stand for an hour
  KernelLogCheck check(f.config, f.dir.path(), f.dir / "state.json");
  append(f.log, kMce);
  ASSERT_TRUE(check.poll());
  ASSERT_EQ(check.run().at(0).code, "KMSG-MCE");
  EXPECT_EQ(held_codes(check.run()), std::set<std::string>{"KMSG-MCE"});
  EXPECT_FALSE(check.clear("KMSG-OOM")) << "a code it does not hold";
  EXPECT_TRUE(check.clear("KMSG-MCE"));
  EXPECT_EQ(check.run().at(0).status, Status::ok);
  KernelLogCheck restarted(f.config, f.dir.path(), f.dir / "state.json");
  EXPECT_EQ(restarted.run().at(0).status, Status::ok) << "a restart does not bring a cleared fault back";
}

// --- Records: level, facility, and where the message starts (issue 31) ---

TEST(KernelRecord, AKmsgRecordCarriesItsLevelFacilityAndSequence) {
  auto r = parse_kmsg_record("4,1234,5678901,-;NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n"
                             " SUBSYSTEM=pci\n DEVICE=+pci:0000:17:00.0\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->level, 4);
  EXPECT_EQ(r->facility, kFacilityKernel);
  EXPECT_TRUE(r->from_kernel());
  EXPECT_EQ(r->seq, 1234u);
  EXPECT_EQ(r->text, "NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.");  // continuation lines dropped
  // Newer kernels add fields (CONFIG_PRINTK_CALLER); a ';' in the message stays in it.
  r = parse_kmsg_record("0,7,8,c,caller=T123;mce: [Hardware Error]: a;b");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->level, 0);
  EXPECT_EQ(r->text, "mce: [Hardware Error]: a;b");
}

TEST(KernelRecord, WhatUserSpaceWritesToKmsgIsLogUser) {
  // `echo '<3>NVRM: Xid ...' > /dev/kmsg` as root: the kernel keeps the level, the facility is 1.
  auto r = parse_kmsg_record("11,99,100,-;NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->level, 3);
  EXPECT_EQ(r->facility, kFacilityUser);
  EXPECT_FALSE(r->from_kernel());
  r = parse_log_line("<11>NVRM: Xid (PCI:0000:17:00): 79, x");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, kFacilityUser);
  EXPECT_EQ(r->level, 3);
}

TEST(KernelRecord, ABadPrefixIsNoRecord) {
  for (const std::string& bad : std::vector<std::string>{"", ";msg", "x,1,2,-;msg", "3,1;msg", "3,1,2;msg", "3,,2,-;msg", "-1,1,2,-;msg", "3,x,2,-;msg",
                                "2048,1,2,-;msg", "184467440737095516160,1,2,-;msg", "3,1,2,-msg without a semicolon",
                                "3,1,2," + std::string(200, '-') + ";msg too far"})
    EXPECT_FALSE(parse_kmsg_record(bad)) << bad;
  for (const std::string& bad : std::vector<std::string>{"", "no priority", " <3>x", "<>x", "<3x>y", "<-1>x", "<2048>x", "<123456>x", "<3", "[ 12.5] <3>x",
                                "NVRM: Xid (PCI:0000:17:00): 79, x", "1234: a line starting with digits"})
    EXPECT_FALSE(parse_log_line(bad)) << bad;
}

TEST(KernelRecord, ALineCarriesItsPriorityAsDmesgRawOrKmsgWritesIt) {
  auto r = parse_log_line("<4>[ 1234.567890] NVRM: Xid (PCI:0000:17:00): 79, x");  // dmesg -r
  ASSERT_TRUE(r);
  EXPECT_EQ(r->level, 4);
  EXPECT_TRUE(r->from_kernel());
  EXPECT_EQ(r->text, "NVRM: Xid (PCI:0000:17:00): 79, x");
  r = parse_log_line("<3> LustreError: x");  // rsyslog's %msg% starts with a space
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "LustreError: x");
  r = parse_log_line("<6>[drm] Initialized");  // a message of its own in brackets: not a timestamp
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "[drm] Initialized");
  r = parse_log_line("<0>[Hardware Error]: x");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "[Hardware Error]: x");
  r = parse_log_line("6,5,6,-;a copy of /dev/kmsg");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->level, 6);
  EXPECT_EQ(r->seq, 5u);
  EXPECT_EQ(r->text, "a copy of /dev/kmsg");
}

TEST(KernelRecord, AnOverlongRecordIsCutAndItsTextSanitized) {
  const std::string body = "mce: [Hardware Error]: \x1b[2J" + std::string(7000, 'x');
  auto r = parse_kmsg_record("0,1,2,-;" + body + "\n");
  ASSERT_TRUE(r);
  EXPECT_LE(r->text.size(), KernelLogReader::kMaxLineBytes);
  EXPECT_TRUE(r->text.starts_with(R"(mce: [Hardware Error]: \u001b[2J)")) << r->text.substr(0, 40);
}

TEST(KernelRecord, LevelNames) {
  EXPECT_EQ(parse_log_level("err"), 3);
  EXPECT_EQ(parse_log_level("error"), 3);
  EXPECT_EQ(parse_log_level("warning"), 4);
  EXPECT_EQ(parse_log_level("warn"), 4);
  EXPECT_EQ(parse_log_level("notice"), 5);
  EXPECT_EQ(parse_log_level("emerg"), 0);
  EXPECT_EQ(parse_log_level("debug"), 7);
  EXPECT_FALSE(parse_log_level("ERR"));
  EXPECT_FALSE(parse_log_level("3"));
  EXPECT_EQ(log_level_name(5), "notice");
  EXPECT_EQ(log_level_name(9), "level 9");
}

TEST(KernelLogReader, LinesWithoutAPriorityAreCountedNeverReturned) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  append(log, "NVRM: Xid (PCI:0000:17:00): 79, pid=1, a line of unknown origin");
  append(log, "<4>NVRM: Xid (PCI:0000:17:00): 79, pid=1, the driver's");
  append(log, "Dec  6 17:49:03 host kernel: mce: [Hardware Error]: a syslog line without its priority");
  append(log, "");
  auto records = reader.read_new();
  EXPECT_EQ(texts(records), std::vector<std::string>{"NVRM: Xid (PCI:0000:17:00): 79, pid=1, the driver's"});
  EXPECT_EQ(reader.without_priority(), 2u);  // the empty line is nothing at all
}

TEST(KernelLogReader, ACopyOfKmsgKeepsSequenceNumbersAndDropsContinuationLines) {
  ar::test::TempDir dir;
  auto log = dir / "k.log";
  std::ofstream(log) << "";
  KernelLogReader reader(log);
  ASSERT_TRUE(reader.open());
  append(log, "3,41,100,-;EXT4-fs error (device sda): x\n SUBSYSTEM=block\n DEVICE=b8:0\n6,42,101,-;usb 1-1: new device");
  auto records = reader.read_new();
  EXPECT_EQ(texts(records), (std::vector<std::string>{"EXT4-fs error (device sda): x", "usb 1-1: new device"}));
  EXPECT_EQ(reader.without_priority(), 0u);
  EXPECT_EQ(reader.last_seq(), 42u);
  // A line starting with a space after a "<PRI>" line is a line of its own, without a priority.
  append(log, "<3>x\n y");
  EXPECT_EQ(texts(reader.read_new()), std::vector<std::string>{"x"});
  EXPECT_EQ(reader.without_priority(), 1u);
}

TEST(KernelLogCheck, ASegfaultReportOrAUserWriteHoldingAFaultsTextIsNoFault) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  // The kernel's report of a program that crashed inside a file a user named after a machine check.
  append(f.log, "<6>python3[99]: segfault at 0 ip 00007f0c sp 00007ffd error 14 in mce: [Hardware Error]: CPU 0: Machine Check: "
                "0 Bank 5: be00000000800400[7f0c+1000]");
  append(f.log, "<14>mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400");  // LOG_USER, info
  append(f.log, "<11>mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400");  // LOG_USER, err
  append(f.log, "<8>mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400");   // LOG_USER, emerg
  append(f.log, "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400");      // no priority
  EXPECT_FALSE(check.poll());
  auto r = check.run().at(0);
  EXPECT_EQ(r.status, Status::ok) << r.message;
  EXPECT_EQ(r.detail["records"]["read"], 4);
  EXPECT_EQ(r.detail["records"]["not_kernel"], 3);
  EXPECT_EQ(r.detail["records"]["without_priority"], 1);
  // The driver's own record still counts.
  append(f.log, kMce);
  EXPECT_TRUE(check.poll());
  EXPECT_EQ(check.run().at(0).code, "KMSG-MCE");
}

TEST(KernelLogCheck, TapsSeeOnlyTheKernelsOwnRecords) {
  LogFixture f;
  KernelLogCheck check(f.config, f.dir.path());
  std::vector<KernelRecord> seen;
  check.set_line_hook([&](const KernelRecord& record) {
    seen.push_back(record);
    return KernelLogCheck::LineVerdict::not_mine;
  });
  append(f.log, "<12>NVRM: Xid (PCI:0000:17:00): 79, written to /dev/kmsg");
  append(f.log, "<4>NVRM: Xid (PCI:0000:17:00): 79, the driver's");
  check.poll();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].level, 4);
  EXPECT_EQ(seen[0].text, "NVRM: Xid (PCI:0000:17:00): 79, the driver's");
}

TEST(KernelLogMatcher, AdminRulesAreAnchoredAndTakeNoticeOrMoreSevereByDefault) {
  KernelLogRule rule{"IB-LINK-DOWN", "mlx5_core .*: Link down", Remedy::drain, ""};
  EXPECT_TRUE(rule.anchored);
  EXPECT_EQ(rule.max_level, kLevelNotice);
  KernelLogMatcher m({rule});
  EXPECT_TRUE(m.match(kern(5, "mlx5_core 0000:01:00.0: Link down")));
  EXPECT_FALSE(m.match(kern(6, "mlx5_core 0000:01:00.0: Link down")));                    // info: above notice
  EXPECT_FALSE(m.match(kern(3, "a.out[1]: segfault ... in mlx5_core 0000:01:00.0: Link down")));  // not at the start
  auto user = kern(3, "mlx5_core 0000:01:00.0: Link down");
  user.facility = kFacilityUser;
  EXPECT_FALSE(m.match(user));
  // An admin may widen a rule: anywhere in the message, any level. Never another facility.
  rule.anchored = false;
  rule.max_level = kLevelDebug;
  KernelLogMatcher wide({rule});
  EXPECT_TRUE(wide.match(kern(6, "netdev: mlx5_core 0000:01:00.0: Link down")));
  EXPECT_TRUE(wide.match(kern(7, "mlx5_core 0000:01:00.0: Link down")));
  EXPECT_FALSE(wide.match(user));
}

TEST(Config, RuleAnchoringAndLevelAreReadAndCheckedWithTheirPosition) {
  auto c = parse_config(R"(
[[checks.kernel_log.rule]]
code = "A"
pattern = "x"
[[checks.kernel_log.rule]]
code = "B"
pattern = "y"
anchored = false
max_level = "warning"
[[checks.kernel_log.rule]]
code = "C"
pattern = "z"
max_level = 6
)", "f.toml");
  ASSERT_TRUE(c) << c.error();
  const auto& rules = c->section<KernelLogConfig>().rules;
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_TRUE(rules[0].anchored);
  EXPECT_EQ(rules[0].max_level, kLevelNotice);
  EXPECT_FALSE(rules[1].anchored);
  EXPECT_EQ(rules[1].max_level, kLevelWarning);
  EXPECT_EQ(rules[2].max_level, kLevelInfo);
  for (const auto* bad : {"\"loud\"", "8", "-1", "true", "\"ERR\""}) {
    auto e = parse_config(std::string("[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = \"x\"\nmax_level = ") + bad + "\n", "f.toml");
    ASSERT_FALSE(e) << bad;
    EXPECT_NE(e.error().find("f.toml:4:1: key 'max_level'"), std::string::npos) << e.error();
    EXPECT_NE(e.error().find("must be a syslog level: emerg, alert, crit, err, warning, notice, info, debug, or 0-7"), std::string::npos)
        << e.error();
  }
  auto e = parse_config("[[checks.kernel_log.rule]]\ncode = \"X\"\npattern = \"x\"\nanchored = \"yes\"\n", "f.toml");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().find("f.toml:4:1: key 'anchored'"), std::string::npos) << e.error();
}
