// healthctl's tables on JSON values: what each shows, and that every line fits 80 columns (measured
// here, independently of the code's own width count) unless asked for the long form.
#include <cstdlib>
#include <ctime>
#include <optional>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "zone_guard.hpp"

#include "format.hpp"

using nlohmann::json;
using ar::healthctl::RenderOptions;

namespace {

// 2026-11-29 14:03:22.000 UTC.
constexpr std::int64_t kNow = 1795961002000;

using ar::test::ZoneGuard;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The columns a line takes on a terminal: its code points, less SGR sequences.
std::size_t columns_of(const std::string& line) {
  const auto plain = std::regex_replace(line, std::regex("\x1b\\[[0-9;]*m"), "");
  std::size_t n = 0;
  for (unsigned char c : plain)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

::testing::AssertionResult fits(const std::string& text, std::size_t width) {
  for (const auto& line : lines_of(text))
    if (columns_of(line) > width)
      return ::testing::AssertionFailure() << columns_of(line) << " columns: [" << line << "]\nin:\n" << text;
  return ::testing::AssertionSuccess();
}

std::size_t widest(const std::string& text) {
  std::size_t w = 0;
  for (const auto& line : lines_of(text)) w = std::max(w, columns_of(line));
  return w;
}

// The line holding `needle` (or "" when none does).
std::string line_with(const std::string& text, const std::string& needle) {
  for (const auto& line : lines_of(text))
    if (line.find(needle) != std::string::npos) return line;
  return "";
}

RenderOptions options(std::size_t width = 80) {
  RenderOptions o;
  o.width = width;
  o.now_ms = kNow;
  o.ellipsis = "\u2026";
  o.user_name = [](std::uint32_t uid) -> std::string { return uid == 0 ? "root" : uid == 1000 ? "alice" : ""; };
  return o;
}

// A status reply as a busy, unlucky node sends it: long paths, long texts, every header line.
json busy_status() {
  const std::string long_message =
      "mount /fsx: probe write of /fsx/.healthd-probe-3f2a9c did not finish within 3 s (the filesystem is hung or "
      "very slow); the node is drained until it answers again";
  return {
      {"node", "gpu-st-p5-48xlarge-1"},
      {"version", "0.1.0"},
      {"pid", 4242},
      {"uptime_s", 93784},
      {"socket", "/tmp/ar-cluster-0123abcd/run/very/long/directory/name/for/the/sockets/healthd-gpu-st-p5-48xlarge-1.sock"},
      {"state_dir", "/var/lib/healthd"},
      {"config_file", "/etc/healthd/healthd.toml"},
      {"jobs_running", 1},
      {"jobs_known", 3},
      {"health",
       {{"node",
         {{"faulty", true},
          {"fault_code", "KMSG-MCE"},
          {"pending_actions", 2},
          {"report_only", true},
          {"drain_withheld", "drain withheld: 3 of 4 nodes (75%) would be out, past max_drained_share 0.7; "
                             "an admin decides"},
          {"slurm", "slurmctld knows no node 'gpu-typo': set [daemon] node_name"},
          {"journal_written", false}}},
        {"sweep_seq", 12},
        {"checks",
         json::array({
             {{"check", "kernel_log"},
              {"status", "fault"},
              {"code", "KMSG-MCE"},
              {"message", "mce: [Hardware Error]: Machine check events logged"},
              {"action", "drain"},
              {"duration_ms", 0},
              {"at_ms", kNow - 12000},
              {"detail",
               {{"path", "/dev/kmsg"},
                {"active", json::array({{{"code", "KMSG-MCE"},
                                         {"message", "mce: [Hardware Error]: Machine check events logged"},
                                         {"action", "drain"},
                                         {"lines", 3}},
                                        {{"code", "KMSG-EXT4"},
                                         {"message", "EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode "
                                                     "#2: comm ls: reading directory lblock 0"},
                                         {"action", "drain"},
                                         {"lines", 1}},
                                        {{"code", "KMSG-EFA"},
                                         {"message", "efa 0000:31:00.0: Failed to process command"},
                                         {"action", "warn"},
                                         {"lines", 1}}})}}}},
             {{"check", "storage"},
              {"status", "fault"},
              {"code", "STORAGE-HUNG"},
              {"message", long_message},
              {"action", "drain"},
              {"duration_ms", 3012},
              {"at_ms", kNow - 3 * 3600 * 1000},
              {"detail", json::object()}},
             {{"check", "efa.count"},
              {"status", "ok"},
              {"code", ""},
              {"message", "not applicable: no EFA device, none expected"},
              {"action", "none"},
              {"duration_ms", 1},
              {"at_ms", kNow - 2000},
              {"detail", json::object()}},
             {{"check", "neuron.count"},
              {"status", "ok"},
              {"code", ""},
              {"message", "no Neuron device"},
              {"action", "none"},
              {"applicable", false},
              {"at_ms", kNow - 2000}},
             {{"check", "gpu.count"},
              {"status", "ok"},
              {"code", ""},
              {"message", "NVML not loaded"},
              {"action", "none"},
              {"at_ms", kNow - 2000},
              {"detail", {{"applicable", false}}}},
             {{"check", "ec2"},
              {"status", "error"},
              {"code", ""},
              {"message", "IMDS not answering: connect 169.254.169.254:80: timed out"},
              {"action", "none"},
              {"at_ms", kNow - 26 * 3600 * 1000}},
             {{"check", "script:a-very-long-admin-script-name-indeed"},
              {"status", "warn"},
              {"code", "SCRIPT-WARN"},
              {"message", "fan 3 failed"},
              {"action", "warn"},
              {"at_ms", kNow - 1000}},
             {{"check", "node.cpus"},
              {"status", "ok"},
              {"code", ""},
              {"message", "8 CPUs online"},
              {"action", "none"},
              {"at_ms", kNow - 1000}},
         })}}},
  };
}

}  // namespace

// ---- status ---------------------------------------------------------------------------------------

TEST(HealthctlFormat, StatusOfABusyNodeFits80ColumnsEveryLine) {
  ZoneGuard utc("UTC");
  const auto out = ar::healthctl::format_status(busy_status(), options(80));
  EXPECT_TRUE(fits(out, 80));
  // The cut detail ends with the ellipsis, the long path keeps its file name.
  EXPECT_NE(line_with(out, "STORAGE-HUNG").find("\u2026"), std::string::npos) << out;
  EXPECT_TRUE(line_with(out, "socket:").ends_with("/sockets/healthd-gpu-st-p5-48xlarge-1.sock")) << out;
  EXPECT_NE(line_with(out, "socket:").find("/tmp/\u2026/"), std::string::npos) << out;
  // Wrapped prose keeps every word: the withheld line's end is on its continuation line.
  EXPECT_NE(out.find("an admin decides"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing is done"), std::string::npos) << out;
}

TEST(HealthctlFormat, StatusFitsANarrowTerminalAndUsesAWideOne) {
  ZoneGuard utc("UTC");
  EXPECT_TRUE(fits(ar::healthctl::format_status(busy_status(), options(60)), 60));
  const auto wide = ar::healthctl::format_status(busy_status(), options(200));
  EXPECT_TRUE(fits(wide, 200));
  EXPECT_NE(wide.find("(the filesystem is hung or very slow)"), std::string::npos) << wide;
}

TEST(HealthctlFormat, StatusLongFormShowsEverythingInFull) {
  ZoneGuard utc("UTC");
  auto o = options(80);
  o.long_form = true;
  const auto out = ar::healthctl::format_status(busy_status(), o);
  EXPECT_NE(out.find("the node is drained until it answers again"), std::string::npos) << out;
  EXPECT_NE(out.find("/tmp/ar-cluster-0123abcd/run/very/long/directory/name/for/the/sockets/"), std::string::npos);
  EXPECT_NE(out.find("script:a-very-long-admin-script-name-indeed"), std::string::npos);
  EXPECT_EQ(out.find("\u2026"), std::string::npos) << out;
  EXPECT_GT(widest(out), 80u);
  // and how long each check took
  EXPECT_NE(out.find("TOOK"), std::string::npos);
  EXPECT_NE(line_with(out, "STORAGE-HUNG").find("3.0s"), std::string::npos) << out;
  EXPECT_NE(line_with(out, "ec2").find("2026-11-28 12:03:22"), std::string::npos) << out;  // the year too
}

TEST(HealthctlFormat, StatusWithNoWidthCutsNothing) {
  ZoneGuard utc("UTC");
  const auto out = ar::healthctl::format_status(busy_status(), options(0));  // a pipe
  EXPECT_NE(out.find("the node is drained until it answers again [drain]"), std::string::npos) << out;
  EXPECT_NE(out.find("/tmp/ar-cluster-0123abcd/run/very/long/directory/"), std::string::npos) << out;
  EXPECT_EQ(out.find("\u2026"), std::string::npos) << out;
  EXPECT_EQ(out.find("TOOK"), std::string::npos) << out;  // the long form's columns only with -l
}

TEST(HealthctlFormat, StatusCutsWithAsciiDotsWhereTheLocaleIsNotUtf8) {
  ZoneGuard utc("UTC");
  auto o = options(80);
  o.ellipsis = "...";
  const auto out = ar::healthctl::format_status(busy_status(), o);
  EXPECT_TRUE(fits(out, 80));
  for (unsigned char c : out) ASSERT_LT(c, 0x80) << out;
  EXPECT_NE(line_with(out, "STORAGE-HUNG").find("..."), std::string::npos) << out;
}

TEST(HealthctlFormat, StatusShowsNotApplicableAsNa) {
  ZoneGuard utc("UTC");
  const auto out = ar::healthctl::format_status(busy_status(), options(80));
  // each of the three ways a result says it does not apply
  for (const char* check : {"efa.count", "neuron.count", "gpu.count"}) {
    const auto line = line_with(out, check);
    EXPECT_TRUE(std::regex_search(line, std::regex(std::string("^") + check + " +n/a ")))
        << check << ": [" << line << "]\n" << out;
  }
  EXPECT_NE(line_with(out, "efa.count").find("no EFA device"), std::string::npos) << out;
  EXPECT_EQ(line_with(out, "efa.count").find("not applicable"), std::string::npos) << out;
  // an applicable healthy check is still "ok"
  EXPECT_TRUE(std::regex_search(line_with(out, "node.cpus"), std::regex("^node\\.cpus +ok ")));
}

TEST(HealthctlFormat, StatusShowsEveryActiveKernelLogFault) {
  ZoneGuard utc("UTC");
  const auto out = ar::healthctl::format_status(busy_status(), options(80));
  std::vector<std::string> rows;
  for (const auto& line : lines_of(out))
    if (line.starts_with("kernel_log ")) rows.push_back(line);
  ASSERT_EQ(rows.size(), 3u) << out;
  EXPECT_NE(rows[0].find("KMSG-MCE"), std::string::npos);
  EXPECT_NE(rows[1].find("KMSG-EXT4"), std::string::npos);
  EXPECT_NE(rows[2].find("KMSG-EFA"), std::string::npos);
  // each with the status its own action gives it
  EXPECT_TRUE(std::regex_search(rows[1], std::regex("^kernel_log +fault ")));
  EXPECT_TRUE(std::regex_search(rows[2], std::regex("^kernel_log +warn ")));
}

TEST(HealthctlFormat, StatusSaysWhenEachResultWasTaken) {
  ZoneGuard utc("UTC");
  const auto out = ar::healthctl::format_status(busy_status(), options(80));
  EXPECT_NE(out.find("TAKEN"), std::string::npos);
  EXPECT_NE(line_with(out, "kernel_log").find("12s ago"), std::string::npos) << out;
  EXPECT_NE(line_with(out, "storage").find("11:03:22"), std::string::npos) << out;  // today, 3 h ago
  EXPECT_NE(line_with(out, "ec2").find("11-28 12:03:22"), std::string::npos) << out;  // yesterday
}

TEST(HealthctlFormat, StatusTimesAreLocal) {
  ZoneGuard berlin("Europe/Berlin");  // UTC+1 in November
  const auto out = ar::healthctl::format_status(busy_status(), options(80));
  EXPECT_NE(line_with(out, "storage").find("12:03:22"), std::string::npos) << out;
}

TEST(HealthctlFormat, StatusColoursResultsOnlyWhenAsked) {
  ZoneGuard utc("UTC");
  auto o = options(80);
  const auto plain = ar::healthctl::format_status(busy_status(), o);
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  o.color = true;
  const auto coloured = ar::healthctl::format_status(busy_status(), o);
  EXPECT_NE(line_with(coloured, "storage").find("\x1b[31mfault\x1b[0m"), std::string::npos) << coloured;
  EXPECT_NE(line_with(coloured, "script:").find("\x1b[33mwarn\x1b[0m"), std::string::npos) << coloured;
  EXPECT_NE(line_with(coloured, "node.cpus").find("\x1b[32mok\x1b[0m"), std::string::npos) << coloured;
  EXPECT_NE(line_with(coloured, "verdict:").find("\x1b[31m"), std::string::npos) << coloured;
  // colour takes no column
  EXPECT_TRUE(fits(coloured, 80));
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

TEST(HealthctlFormat, StatusMakesTheDaemonsTextPrintable) {
  json d = {{"node", "n1\x1b[2J"},
            {"health",
             {{"checks", json::array({{{"check", "kernel_log"},
                                       {"status", "fault"},
                                       {"code", "KMSG-X"},
                                       {"message", "evil \x1b]0;pwned\x07 line \xc2\x9b" "31m"},
                                       {"at_ms", kNow}}})}}}};
  const auto out = ar::healthctl::format_status(d, options(80));
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos) << out;
  EXPECT_NE(out.find("evil ?]0;pwned? line ?31m"), std::string::npos) << out;
}

TEST(HealthctlFormat, StatusOfAnotherShapeShowsWhatItCan) {
  // Every field of the wrong type: no exception, placeholders where the values would be.
  json d = {{"node", 42}, {"pid", "x"}, {"health", {{"node", "faulty"}, {"checks", json::array({1, "two", json::object()})}}}};
  std::string out;
  ASSERT_NO_THROW(out = ar::healthctl::format_status(d, options(80)));
  EXPECT_NE(out.find("node:         ?"), std::string::npos) << out;
  ASSERT_NO_THROW(ar::healthctl::format_status(json::array(), options(80)));
  ASSERT_NO_THROW(ar::healthctl::format_gpus(json{{"health", {{"gpus", json::array({1, {{"remap", 3}}})}}}}, options()));
  ASSERT_NO_THROW(ar::healthctl::format_events(json{{"events", json::array({nullptr, {{"at_ms", "x"}}})}}, options()));
  ASSERT_NO_THROW(ar::healthctl::format_jobs(json{{"jobs", json::array({{{"steps", 5}}})}}, options()));
  ASSERT_NO_THROW(ar::healthctl::format_explain(json{{"timeline", json::array({7})}}, options()));
}

// ---- gpus -----------------------------------------------------------------------------------------

namespace {

json gpu_status() {
  return {{"node", "p5-1"},
          {"health",
           {{"gpus",
             json::array({{{"index", 0},
                           {"bus_id", "00000000:18:00.0"},
                           {"uuid", "GPU-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"},
                           {"name", "NVIDIA H100 80GB HBM3"},
                           {"health", "ok"},
                           {"problems", json::array()},
                           {"ecc_uncorrected", 0},
                           {"ecc_corrected", 3},
                           {"remap", {{"corrected", 0}, {"uncorrected", 0}, {"pending", false}, {"failure", false}}},
                           {"xid", nullptr}},
                          {{"index", 1},
                           {"bus_id", "00000000:2a:00.0"},
                           {"uuid", "GPU-ffeeddcc-5e6f-7a8b-9c0d-1e2f3a4b5c6d"},
                           {"name", "NVIDIA H100 80GB HBM3"},
                           {"health", "fault"},
                           {"problems",
                            json::array({{{"check", "gpu.memory"},
                                          {"code", "GPU-ECC-DBE"},
                                          {"message", "GPU 1 (00000000:2a:00.0, GPU-ffeeddcc-5e6f-7a8b-9c0d-1e2f3a4b5c6d): "
                                                      "2 volatile uncorrected ECC errors since the driver loaded"}},
                                         {{"check", "gpu.memory"},
                                          {"code", "GPU-REMAP-FAILED"},
                                          {"message", "row remapping failed: replace the GPU"}}})},
                           {"ecc_uncorrected", 2},
                           {"ecc_corrected", 117},
                           {"remap", {{"corrected", 1}, {"uncorrected", 4}, {"pending", true}, {"failure", true}}},
                           {"xid", {{"xid", 79}, {"at_ms", kNow - 180000}, {"count", 2}}}},
                          {{"index", 2},
                           {"bus_id", "00000001:3b:00.0"},
                           {"uuid", "GPU-00000000-0000-0000-0000-000000000002"},
                           {"health", "warn"},
                           {"ecc_uncorrected", nullptr},
                           {"ecc_corrected", nullptr},
                           {"remap", {{"corrected", 0}, {"uncorrected", 1}, {"pending", true}, {"failure", false}}},
                           {"xid", nullptr}}})}}}};
}

}  // namespace

TEST(HealthctlFormat, GpusTableOneLinePerGpuIn80Columns) {
  const auto out = ar::healthctl::format_gpus(gpu_status(), options(80));
  EXPECT_TRUE(fits(out, 80));
  const auto lines = lines_of(out);
  ASSERT_GE(lines.size(), 4u) << out;
  EXPECT_TRUE(std::regex_search(lines[0], std::regex("^INDEX +BUS ID +UUID +HEALTH +ECC U/C +REMAP C/U +XID$")))
      << lines[0];
  // index, bus id as lspci writes it, the UUID shortened, health, ECC uncorrected/corrected
  EXPECT_TRUE(std::regex_search(lines[1], std::regex("^    0  18:00\\.0 +GPU-1a2b3c4d\u2026 +ok +0/3 +0/0 +-$")))
      << lines[1];
  EXPECT_TRUE(std::regex_search(lines[2], std::regex("^    1  2a:00\\.0 +GPU-ffeeddcc\u2026 +fault +2/117 +1/4 FAILED +79 x2 3m ago$")))
      << lines[2];
  // another PCI domain keeps its domain (as much of it as fits); unknown counters are "-"
  EXPECT_TRUE(std::regex_search(lines[3], std::regex("^    2  00000001:3b:\\S* +GPU-\\S+ +warn +- +0/1 pending +-$")))
      << lines[3];
  // the problems follow, each on its line
  EXPECT_NE(out.find("GPU 1: gpu.memory GPU-ECC-DBE: GPU 1 (00000000:2a:00.0"), std::string::npos) << out;
  EXPECT_NE(out.find("GPU 1: gpu.memory GPU-REMAP-FAILED: row remapping failed: replace the GPU"), std::string::npos);
}

TEST(HealthctlFormat, GpusLongFormShowsTheWholeUuidAndName) {
  auto o = options(80);
  o.long_form = true;
  const auto out = ar::healthctl::format_gpus(gpu_status(), o);
  EXPECT_NE(out.find("00000000:18:00.0  GPU-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"), std::string::npos) << out;
  EXPECT_NE(out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << out;
  EXPECT_NE(out.find("2 volatile uncorrected ECC errors since the driver loaded"), std::string::npos) << out;
}

TEST(HealthctlFormat, GpusColoursHealth) {
  auto o = options(80);
  o.color = true;
  const auto out = ar::healthctl::format_gpus(gpu_status(), o);
  EXPECT_NE(line_with(out, "2a:00.0").find("\x1b[31mfault"), std::string::npos) << out;
  EXPECT_NE(line_with(out, "18:00.0").find("\x1b[32mok"), std::string::npos) << out;
  EXPECT_TRUE(fits(out, 80));
}

TEST(HealthctlFormat, GpusSaysWhenThereIsNone) {
  EXPECT_EQ(ar::healthctl::format_gpus(json{{"node", "n1"}, {"health", {{"gpus", json::array()}}}}, options()),
            "no NVIDIA GPU seen by healthd on n1\n");
  // A daemon that predates health.gpus is not taken for a node without GPUs.
  EXPECT_NE(ar::healthctl::format_gpus(json{{"node", "n1"}, {"version", "0.0.9"}, {"health", json::object()}}, options())
                .find("does not report GPUs"),
            std::string::npos);
}

// ---- jobs, explain, events ------------------------------------------------------------------------

TEST(HealthctlFormat, JobsTableShowsUserFlagStepAndExit) {
  json d = R"({"node":"n2","jobs":[{"job_id":42,"uid":1000,"restart_count":0,"auto_resume":true,"running":false,
    "steps":[{"step":"batch","step_id":4294967291,"restart_count":0,"auto_resume":true,"running":false,"task_exits":[]},
             {"step":"0","step_id":0,"restart_count":0,"auto_resume":true,"running":false,
              "task_exits":[{"task_rank":1,"wait_status":768,"description":"exit 3"}]}]},
    {"job_id":43,"uid":4242,"auto_resume":false,"steps":[{"step":"batch","running":true}]}]})"_json;
  auto out = ar::healthctl::format_jobs(d, options());
  EXPECT_TRUE(fits(out, 80));
  EXPECT_TRUE(std::regex_search(line_with(out, "42"), std::regex("^42 +alice +yes "))) << out;
  EXPECT_TRUE(std::regex_search(line_with(out, "43"), std::regex("^43 +4242 +no "))) << out;  // no name: the uid
  EXPECT_NE(out.find("task 1: exit 3"), std::string::npos) << out;
  EXPECT_NE(out.find("batch"), std::string::npos) << out;
  EXPECT_NE(out.find("USER"), std::string::npos) << out;
}

TEST(HealthctlFormat, EmptyJobsSaySo) {
  EXPECT_EQ(ar::healthctl::format_jobs(json{{"node", "n1"}, {"jobs", json::array()}}), "no jobs known on node n1\n");
}

TEST(HealthctlFormat, ExplainShowsLocalDatesAndOffsets) {
  json d = {{"node", "n2"},
            {"job_id", 42},
            {"uid", 1000},
            {"timeline", json::array({{{"at_ms", kNow - 86400000 + 5}, {"node", "n2"}, {"event", "step_failed"},
                                       {"detail", "step 0 task 1: exit 3"}},
                                      {{"at_ms", kNow - 86400000 + 1145}, {"node", "n2"}, {"event", "requeued"},
                                       {"detail", "attempt 1 ended: GPU-XID-79 on n2"}}})}};
  {
    ZoneGuard utc("UTC");
    const auto out = ar::healthctl::format_explain(d, options());
    EXPECT_NE(out.find("UTC+00:00"), std::string::npos) << out;
    EXPECT_NE(out.find("job 42 (alice) as seen by healthd on n2"), std::string::npos) << out;
    EXPECT_TRUE(std::regex_search(line_with(out, "step_failed"), std::regex("^2026-11-28 14:03:22\\.005 +\\+0\\.000s ")))
        << out;
    EXPECT_TRUE(std::regex_search(line_with(out, "requeued"), std::regex("^2026-11-28 14:03:23\\.145 +\\+1\\.140s ")))
        << out;
    EXPECT_TRUE(fits(out, 80));
  }
  ZoneGuard ny("America/New_York");
  const auto out = ar::healthctl::format_explain(d, options());
  EXPECT_NE(out.find("UTC-05:00"), std::string::npos) << out;
  EXPECT_NE(line_with(out, "step_failed").find("2026-11-28 09:03:22.005"), std::string::npos) << out;
}

TEST(HealthctlFormat, EventsShowDatesUsersAndMessagesNewestFirst) {
  ZoneGuard utc("UTC");
  json d = {{"node", "n1"},
            {"events",
             json::array({{{"at_ms", kNow - 1000}, {"kind", "admin"}, {"node", "n1"}, {"uid", 0},
                           {"message", "drained by root via healthctl: done"}},
                          {{"at_ms", kNow - 5000}, {"kind", "requeue"}, {"node", "n1"}, {"job_id", 42}, {"uid", 1000},
                           {"attempt", 1}, {"code", "GPU-XID-48"},
                           {"message", "requeued after GPU-XID-48 on n1: NVRM: Xid (PCI:0000:17:00): 48, pid=4242, "
                                       "name=python, An uncorrectable double bit error"},
                           {"action", "drain"}},
                          {{"at_ms", kNow - 90000000}, {"kind", "incident"}, {"node", "n1"}, {"job_id", 7}, {"uid", 4242},
                           {"code", "KMSG-MCE"}, {"message", "mce"}}})}};
  const auto out = ar::healthctl::format_events(d, options());
  EXPECT_TRUE(fits(out, 80));
  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 4u) << out;
  EXPECT_TRUE(std::regex_search(lines[1], std::regex("^2026-11-29 14:03:21  admin +- +root +drained by root"))) << out;
  EXPECT_TRUE(std::regex_search(lines[2], std::regex("^2026-11-29 14:03:17  requeue +42 +alice +attempt 1: GPU-XID-48: ")))
      << out;
  EXPECT_TRUE(std::regex_search(lines[3], std::regex("^2026-11-28 13:03:22  incident +7 +4242 +KMSG-MCE: mce$"))) << out;
  auto o = options();
  o.long_form = true;
  EXPECT_NE(ar::healthctl::format_events(d, o).find("An uncorrectable double bit error [drain]"), std::string::npos);
  EXPECT_EQ(ar::healthctl::format_events(json{{"node", "n1"}, {"events", json::array()}}, options()),
            "no events recorded by healthd on n1\n");
}
