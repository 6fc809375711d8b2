// The EDAC (host memory ECC) check: its sysfs reader, its judgement, its config section. The fake
// trees follow the kernel's documented layout (Documentation/ABI/testing/sysfs-devices-edac and the
// tree drawn in Documentation/admin-guide/ras.rst, "dimmX or rankX directories").
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "result_area.hpp"

#include "checks/edac/edac_check.hpp"
#include "checks/edac/edac_config.hpp"
#include "checks/registry.hpp"
#include "collectors/edac_sysfs.hpp"
#include "config/config.hpp"
#include "fake_tree.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {
const std::string kMc = "/sys/devices/system/edac/mc/";
const auto t0 = EdacRiseWindow::Clock::time_point{} + 1h;

void add_dimm(const ar::test::FakeTree& t, const std::string& mc, const std::string& dimm, const std::string& label,
              std::uint64_t ue = 0, std::uint64_t ce = 0) {
  t.write(kMc + mc + "/" + dimm + "/dimm_label", label + "\n");
  t.write(kMc + mc + "/" + dimm + "/dimm_ue_count", std::to_string(ue) + "\n");
  t.write(kMc + mc + "/" + dimm + "/dimm_ce_count", std::to_string(ce) + "\n");
  t.write(kMc + mc + "/" + dimm + "/dimm_location", "channel 0 slot 0 \n");
  t.write(kMc + mc + "/" + dimm + "/size", "32768\n");
}

// A controller as skx_edac/i10nm_edac make it: the counters, its name, its size, and what the sysfs
// core adds (uevent, power/, a subsystem symlink).
void add_mc(const ar::test::FakeTree& t, const std::string& mc, std::uint64_t ue = 0, std::uint64_t ce = 0) {
  t.write(kMc + mc + "/ue_count", std::to_string(ue) + "\n");
  t.write(kMc + mc + "/ce_count", std::to_string(ce) + "\n");
  t.write(kMc + mc + "/ue_noinfo_count", "0\n");
  t.write(kMc + mc + "/ce_noinfo_count", "0\n");
  t.write(kMc + mc + "/mc_name", "Skylake Socket#" + mc.substr(2) + " IMC#0\n");
  t.write(kMc + mc + "/size_mb", "65536\n");
  t.write(kMc + mc + "/seconds_since_reset", "12345\n");
  t.write(kMc + mc + "/uevent", "");
  t.mkdir(kMc + mc + "/power");
}

// Two controllers of two DIMMs each, no error anywhere.
void healthy_host(const ar::test::FakeTree& t) {
  add_mc(t, "mc0");
  add_dimm(t, "mc0", "dimm0", "CPU_SrcID#0_MC#0_Chan#0_DIMM#0");
  add_dimm(t, "mc0", "dimm1", "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
  add_mc(t, "mc1");
  add_dimm(t, "mc1", "dimm0", "CPU_SrcID#1_MC#0_Chan#0_DIMM#0");
  add_dimm(t, "mc1", "dimm1", "CPU_SrcID#1_MC#0_Chan#1_DIMM#0");
  std::filesystem::create_directory_symlink("../../../../bus/edac", t.root() / std::string(kMc + "mc0/subsystem").substr(1));
  t.write(kMc + "uevent", "");
}

void set(const ar::test::FakeTree& t, const std::string& rel, std::uint64_t v) { t.write(kMc + rel, std::to_string(v) + "\n"); }

using ar::test::area;

EdacConfig limit(std::uint64_t max_rise, std::chrono::seconds window = 3600s) {
  EdacConfig c;
  c.max_corrected_rise = max_rise;
  c.corrected_window = window;
  return c;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST(EdacSysfs, ReadsControllersTheirDimmsAndLabelsInNumberOrder) {
  ar::test::FakeTree t;
  healthy_host(t);
  add_mc(t, "mc10", 0, 7);  // numbered, not alphabetical: mc10 after mc1
  add_dimm(t, "mc10", "rank0", "mc#10csrow#0channel#0", 0, 7);  // a controller that cannot tell modules apart
  t.mkdir(kMc + "mc10/csrow0");                                  // the legacy tree: not read
  t.mkdir(kMc + "mcx");                                          // not mc<digits>
  auto snap = read_edac_sysfs(t.root());
  EXPECT_TRUE(snap.present);
  EXPECT_TRUE(snap.errors.empty()) << snap.errors.front();
  ASSERT_EQ(snap.controllers.size(), 3u);
  EXPECT_EQ(snap.controllers[0].name, "mc0");
  EXPECT_EQ(snap.controllers[1].name, "mc1");
  EXPECT_EQ(snap.controllers[2].name, "mc10");
  const auto& mc0 = snap.controllers[0];
  EXPECT_EQ(mc0.mc_name, "Skylake Socket#0 IMC#0");
  EXPECT_EQ(mc0.size_mb, 65536u);
  EXPECT_EQ(mc0.ue_count, 0u);
  EXPECT_EQ(mc0.ce_count, 0u);
  EXPECT_TRUE(mc0.notes.empty());
  ASSERT_EQ(mc0.dimms.size(), 2u);
  EXPECT_EQ(mc0.dimms[1].name, "dimm1");
  EXPECT_EQ(mc0.dimms[1].label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
  EXPECT_EQ(mc0.dimms[1].ue_count, 0u);
  ASSERT_EQ(snap.controllers[2].dimms.size(), 1u);
  EXPECT_EQ(snap.controllers[2].dimms[0].name, "rank0");
  EXPECT_EQ(snap.controllers[2].dimms[0].ce_count, 7u);
}

TEST(EdacSysfs, DimmCountersAreOptionalControllerCountersAreNot) {
  ar::test::FakeTree t;
  add_mc(t, "mc0");
  t.write(kMc + "mc0/dimm0/dimm_label", "DIMM_A1\n");  // a kernel older than the per-DIMM counters (ABI: October 2016)
  t.remove(kMc + "mc0/size_mb");
  t.remove(kMc + "mc0/ce_count");
  auto snap = read_edac_sysfs(t.root());
  ASSERT_EQ(snap.controllers.size(), 1u);
  const auto& c = snap.controllers[0];
  EXPECT_FALSE(c.size_mb);
  EXPECT_TRUE(c.notes.empty());
  ASSERT_EQ(c.dimms.size(), 1u);
  EXPECT_FALSE(c.dimms[0].ue_count);
  EXPECT_TRUE(c.dimms[0].ue_error.empty());
  EXPECT_FALSE(c.ce_count);
  EXPECT_TRUE(contains(c.ce_error, "ce_count: absent")) << c.ce_error;
}

TEST(EdacSysfs, ParsesOnlyOneUnsignedDecimal) {
  EXPECT_EQ(parse_edac_count("0"), 0u);
  EXPECT_EQ(parse_edac_count("42\n"), 42u);
  EXPECT_EQ(parse_edac_count("18446744073709551615"), 18446744073709551615u);
  EXPECT_FALSE(parse_edac_count("18446744073709551616"));  // one past u64
  EXPECT_FALSE(parse_edac_count(""));
  EXPECT_FALSE(parse_edac_count("-1"));
  EXPECT_FALSE(parse_edac_count("+1"));
  EXPECT_FALSE(parse_edac_count(" 1"));
  EXPECT_FALSE(parse_edac_count("0x10"));
  EXPECT_FALSE(parse_edac_count("12abc"));
  EXPECT_FALSE(parse_edac_count("1 2"));
}

TEST(EdacCheck, AHealthyHostPassesBothResults) {
  ar::test::FakeTree t;
  healthy_host(t);
  auto rs = EdacCheck(EdacConfig{}, t.root()).run_at(t0);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].check, "edac.uncorrected");
  EXPECT_EQ(rs[1].check, "edac.corrected");
  EXPECT_EQ(rs[0].status, Status::ok);
  EXPECT_EQ(rs[0].message, "no uncorrected memory errors on 2 memory controllers (4 DIMMs)");
  EXPECT_EQ(rs[1].status, Status::ok);
  EXPECT_EQ(rs[1].message,
            "0 corrected memory errors since the EDAC counters were reset, on 2 memory controllers (not judged: "
            "max_corrected_rise unset)");
  EXPECT_EQ(rs[0].detail["controllers"].size(), 2u);
  EXPECT_EQ(rs[0].detail["controllers"][1]["dimms"][0]["label"], "CPU_SrcID#1_MC#0_Chan#0_DIMM#0");
  EXPECT_EQ(rs[0].detail["controllers"][0]["mc_name"], "Skylake Socket#0 IMC#0");
}

TEST(EdacCheck, AnUncorrectedErrorDrainsNamingTheControllerAndTheDimmLabel) {
  ar::test::FakeTree t;
  healthy_host(t);
  set(t, "mc1/ue_count", 2);
  set(t, "mc1/dimm1/dimm_ue_count", 2);
  auto r = area(EdacCheck(EdacConfig{}, t.root()).run_at(t0), "edac.uncorrected");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "EDAC-UE");
  EXPECT_EQ(r.action, Remedy::drain);
  EXPECT_EQ(r.message, "mc1: 2 uncorrected memory errors on DIMM CPU_SrcID#1_MC#0_Chan#1_DIMM#0 (mc1/dimm1)");
  EXPECT_EQ(r.detail["controllers"][1]["ue_count"], 2);

  // a second controller with one: the first is named, the other counted
  set(t, "mc0/ue_count", 1);
  r = area(EdacCheck(EdacConfig{}, t.root()).run_at(t0), "edac.uncorrected");
  EXPECT_EQ(r.message,
            "mc0: 1 uncorrected memory error (no DIMM named by the driver) (and 1 more)");  // mc0's had no DIMM information

  EdacConfig c;
  c.uncorrected_action = Remedy::reboot;
  r = area(EdacCheck(c, t.root()).run_at(t0), "edac.uncorrected");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.action, Remedy::reboot);
  c.uncorrected_action = Remedy::warn;
  EXPECT_EQ(area(EdacCheck(c, t.root()).run_at(t0), "edac.uncorrected").status, Status::warn);
  c.uncorrected_action = Remedy::none;
  r = area(EdacCheck(c, t.root()).run_at(t0), "edac.uncorrected");
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_TRUE(r.code.empty());
  EXPECT_TRUE(contains(r.message, "not acted on")) << r.message;
}

TEST(EdacCheck, ADimmsOwnUncorrectedCountIsAFaultEvenIfTheControllerFileSaysNone) {
  ar::test::FakeTree t;
  healthy_host(t);
  set(t, "mc0/dimm0/dimm_ue_count", 3);
  set(t, "mc0/dimm1/dimm_ue_count", 1);
  t.write(kMc + "mc0/ue_count", "garbage\n");
  auto r = area(EdacCheck(EdacConfig{}, t.root()).run_at(t0), "edac.uncorrected");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.message, "mc0: 4 uncorrected memory errors on DIMM CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (mc0/dimm0) and 1 more DIMM");
}

TEST(EdacCheck, CorrectedErrorsAreJudgedByTheirRiseWithinTheWindowOnlyWithALimit) {
  ar::test::FakeTree t;
  healthy_host(t);
  set(t, "mc0/ce_count", 100);  // since boot, before healthd: the baseline, not a rise
  set(t, "mc0/dimm1/dimm_ce_count", 100);
  EdacCheck check(limit(10), t.root());
  auto first = area(check.run_at(t0), "edac.corrected");
  EXPECT_EQ(first.status, Status::ok) << first.message;
  EXPECT_EQ(first.message,
            "corrected memory errors within 10 per controller in 3600 s; 100 corrected memory errors since the EDAC "
            "counters were reset, on 2 memory controllers");

  set(t, "mc0/ce_count", 110);  // a rise of 10: at the limit, fine
  set(t, "mc0/dimm1/dimm_ce_count", 110);
  EXPECT_EQ(area(check.run_at(t0 + 60s), "edac.corrected").status, Status::ok);

  set(t, "mc0/ce_count", 111);  // 11 within the hour: past it
  set(t, "mc0/dimm0/dimm_ce_count", 1);
  set(t, "mc0/dimm1/dimm_ce_count", 110);
  auto over = area(check.run_at(t0 + 120s), "edac.corrected");
  EXPECT_EQ(over.status, Status::warn);
  EXPECT_EQ(over.code, "EDAC-CE");
  EXPECT_EQ(over.action, Remedy::warn);
  EXPECT_EQ(over.message,
            "mc0: 11 corrected memory errors within 3600 s (limit 10), most on DIMM CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (mc0/dimm1)");
  EXPECT_EQ(over.detail["controllers"][0]["rise"], 11);
  EXPECT_EQ(over.detail["controllers"][0]["dimms"][1]["rise"], 10);
  // the uncorrected result is not touched by correctable errors
  EXPECT_EQ(area(check.run_at(t0 + 130s), "edac.uncorrected").status, Status::ok);

  // an hour after the rise, with no new error, the window holds none of it
  EXPECT_EQ(area(check.run_at(t0 + 120s + 3601s), "edac.corrected").status, Status::ok);

  // without a limit the same rise is shown, never judged
  EdacCheck unjudged(EdacConfig{}, t.root());
  unjudged.run_at(t0);
  set(t, "mc0/ce_count", 5000);
  auto shown = area(unjudged.run_at(t0 + 60s), "edac.corrected");
  EXPECT_EQ(shown.status, Status::ok);
  EXPECT_TRUE(shown.code.empty());
  EXPECT_EQ(shown.detail["controllers"][0]["rise"], 4889);
  EXPECT_TRUE(contains(shown.message, "5000 corrected memory errors since")) << shown.message;
}

TEST(EdacCheck, CorrectedActionIsTheAdminsAndDrainIsAFault) {
  ar::test::FakeTree t;
  healthy_host(t);
  auto c = limit(0);
  c.corrected_action = Remedy::drain;
  EdacCheck check(c, t.root());
  check.run_at(t0);
  set(t, "mc1/ce_count", 1);
  auto r = area(check.run_at(t0 + 30s), "edac.corrected");
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.action, Remedy::drain);
  EXPECT_EQ(r.message, "mc1: 1 corrected memory error within 3600 s (limit 0)");  // no DIMM count rose
}

TEST(EdacCheck, ACounterThatFallsRestartsTheWindowAndClearsAnUncorrectedFault) {
  ar::test::FakeTree t;
  healthy_host(t);
  set(t, "mc0/ce_count", 500);
  set(t, "mc0/ue_count", 1);
  EdacCheck check(limit(10), t.root());
  auto first = check.run_at(t0);
  EXPECT_EQ(area(first, "edac.uncorrected").code, "EDAC-UE");
  EXPECT_EQ(area(first, "edac.corrected").status, Status::ok);

  // reset_counters written (or the driver reloaded): both back near zero
  set(t, "mc0/ce_count", 3);
  set(t, "mc0/ue_count", 0);
  auto reset = check.run_at(t0 + 60s);
  EXPECT_EQ(area(reset, "edac.uncorrected").status, Status::ok);
  EXPECT_EQ(area(reset, "edac.corrected").status, Status::ok);  // 500 -> 3 is no rise
  EXPECT_EQ(area(reset, "edac.corrected").detail["controllers"][0]["rise"], 0);

  // and rises are counted from the new value
  set(t, "mc0/ce_count", 14);
  auto again = area(check.run_at(t0 + 120s), "edac.corrected");
  EXPECT_EQ(again.code, "EDAC-CE");
  EXPECT_EQ(again.detail["controllers"][0]["rise"], 11);
}

TEST(EdacCheck, NoEdacIsNotApplicable) {
  ar::test::FakeTree t;
  for (const auto& r : EdacCheck(limit(0), t.root()).run_at(t0)) {
    EXPECT_EQ(r.status, Status::ok) << r.check;
    EXPECT_EQ(r.message, "not applicable: no EDAC driver loaded (no /sys/devices/system/edac/mc; common on VMs)");
  }
  t.mkdir(kMc);  // the EDAC core built in, no controller driver bound
  t.write(kMc + "uevent", "");
  for (const auto& r : EdacCheck(limit(0), t.root()).run_at(t0)) {
    EXPECT_EQ(r.status, Status::ok) << r.check;
    EXPECT_TRUE(contains(r.message, "not applicable: no EDAC memory controller registered")) << r.message;
  }
}

TEST(EdacHostile, GarbageAndHugeNumbersAreUnreadableNeverACrashOrAFault) {
  ar::test::FakeTree t;
  healthy_host(t);
  t.write(kMc + "mc0/ue_count", "lots\x1b[31m\n");
  t.write(kMc + "mc1/ue_count", "99999999999999999999999\n");
  t.write(kMc + "mc1/ce_count", "-1\n");
  t.write(kMc + "mc0/dimm0/dimm_ce_count", "\xff\xfe");
  EdacCheck check(limit(10), t.root());
  auto rs = check.run_at(t0);
  const auto& ue = area(rs, "edac.uncorrected");
  EXPECT_EQ(ue.status, Status::error);
  EXPECT_EQ(ue.action, Remedy::none);
  EXPECT_TRUE(contains(ue.message, "mc0/ue_count: not an unsigned integer: 'lots\\u001b[31m'")) << ue.message;
  EXPECT_TRUE(contains(ue.message, "(and 1 more)")) << ue.message;
  EXPECT_EQ(ue.detail["errors"].size(), 2u);
  EXPECT_EQ(ue.message.find('\x1b'), std::string::npos);
  const auto& ce = area(rs, "edac.corrected");
  EXPECT_EQ(ce.status, Status::error);
  EXPECT_TRUE(contains(ce.message, "mc0/dimm0/dimm_ce_count: not an unsigned integer: '\\xff\\xfe'")) << ce.message;
  EXPECT_NO_THROW((void)ce.to_json().dump());
  EXPECT_NO_THROW((void)ue.to_json().dump());

  // an unreadable counter on one controller does not hide a fault on another
  set(t, "mc1/ue_count", 1);
  EXPECT_EQ(area(check.run_at(t0 + 30s), "edac.uncorrected").code, "EDAC-UE");
}

TEST(EdacHostile, AFileWhereADirectoryBelongsIsReported) {
  {
    ar::test::FakeTree t;
    t.write("/sys/devices/system/edac/mc", "not a directory\n");
    auto rs = EdacCheck(EdacConfig{}, t.root()).run_at(t0);
    EXPECT_EQ(rs[0].status, Status::error);
    EXPECT_TRUE(contains(rs[0].message, "/sys/devices/system/edac/mc: not a directory")) << rs[0].message;
  }
  {
    ar::test::FakeTree t;
    healthy_host(t);
    t.write(kMc + "mc2", "0\n");         // a file named like a controller
    t.remove(kMc + "mc1/dimm0");
    t.write(kMc + "mc1/dimm0", "1\n");   // a file named like a DIMM: a note; its share is in mc1's counts
    auto snap = read_edac_sysfs(t.root());
    ASSERT_EQ(snap.errors.size(), 1u);
    EXPECT_TRUE(contains(snap.errors[0], "mc2: not a directory")) << snap.errors[0];
    ASSERT_EQ(snap.controllers.size(), 2u);
    EXPECT_EQ(snap.controllers[1].dimms.size(), 1u);
    ASSERT_EQ(snap.controllers[1].notes.size(), 1u);
    EXPECT_TRUE(contains(snap.controllers[1].notes[0], "mc1/dimm0: not a directory"));
    auto r = area(EdacCheck(EdacConfig{}, t.root()).run_at(t0), "edac.uncorrected");
    EXPECT_EQ(r.status, Status::error);  // a controller could not be looked at
    EXPECT_TRUE(contains(r.message, "mc2: not a directory")) << r.message;
    EXPECT_TRUE(contains(r.message, "; not read: ")) << r.message;
  }
}

TEST(EdacHostile, SymlinksAreNotFollowedAndFifosAreNotWaitedOn) {
  ar::test::FakeTree t;
  healthy_host(t);
  // a controller directory that is a link to somewhere else, with an error count there
  t.write("/elsewhere/ue_count", "5\n");
  t.write("/elsewhere/ce_count", "5\n");
  std::filesystem::create_directory_symlink(t.root() / "elsewhere", t.root() / std::string(kMc + "mc3").substr(1));
  // a counter that is a link to a file saying 7
  t.write("/seven", "7\n");
  t.remove(kMc + "mc0/ue_count");
  std::filesystem::create_symlink(t.root() / "seven", t.root() / std::string(kMc + "mc0/ue_count").substr(1));
  // a counter that is a FIFO: a plain read would block forever
  t.remove(kMc + "mc1/ce_count");
  ASSERT_EQ(::mkfifo((t.root() / std::string(kMc + "mc1/ce_count").substr(1)).c_str(), 0600), 0);
  // a label that is far longer than a sysfs page
  t.write(kMc + "mc1/dimm1/dimm_label", std::string(1 << 20, 'A'));

  auto snap = read_edac_sysfs(t.root());
  ASSERT_EQ(snap.controllers.size(), 2u);  // mc3 not followed
  ASSERT_EQ(snap.errors.size(), 1u);
  EXPECT_TRUE(contains(snap.errors[0], "mc3: a symbolic link, not followed")) << snap.errors[0];
  EXPECT_FALSE(snap.controllers[0].ue_count);
  EXPECT_TRUE(contains(snap.controllers[0].ue_error, "mc0/ue_count: a symbolic link, not followed")) << snap.controllers[0].ue_error;
  EXPECT_FALSE(snap.controllers[1].ce_count);
  EXPECT_TRUE(contains(snap.controllers[1].ce_error, "mc1/ce_count: not a regular file")) << snap.controllers[1].ce_error;
  EXPECT_TRUE(snap.controllers[1].dimms[1].label.empty());
  ASSERT_EQ(snap.controllers[1].notes.size(), 1u);
  EXPECT_TRUE(contains(snap.controllers[1].notes[0], "dimm_label: longer than 4096 bytes")) << snap.controllers[1].notes[0];
  auto rs = EdacCheck(EdacConfig{}, t.root()).run_at(t0);
  EXPECT_EQ(rs[0].status, Status::error);  // neither the linked 5 nor the linked 7 is a fault
}

TEST(EdacHostile, ALabelIsSanitizedAndCutInTheDrainReason) {
  ar::test::FakeTree t;
  healthy_host(t);
  add_dimm(t, "mc0", "dimm0", "DIMM\x1b]0;owned\x07_A1" + std::string(200, 'x'), 1);
  set(t, "mc0/ue_count", 1);
  auto r = area(EdacCheck(EdacConfig{}, t.root()).run_at(t0), "edac.uncorrected");
  EXPECT_EQ(r.code, "EDAC-UE");
  EXPECT_EQ(r.message.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.message.find('\x07'), std::string::npos);
  EXPECT_TRUE(contains(r.message, "on DIMM DIMM\\u001b]0;owned\\u0007_A1x")) << r.message;
  EXPECT_LT(r.message.size(), 160u);
}

TEST(EdacHostile, AtMost64ControllersAnd512DimmsAreRead) {
  ar::test::FakeTree t;
  for (int i = 0; i < 70; ++i) add_mc(t, "mc" + std::to_string(i));
  for (int i = 0; i < 600; ++i) t.write(kMc + "mc" + std::to_string(i % 64) + "/dimm" + std::to_string(i / 64) + "/dimm_ue_count", "0\n");
  auto snap = read_edac_sysfs(t.root());
  EXPECT_EQ(snap.controllers.size(), kEdacMaxControllers);
  EXPECT_EQ(snap.controllers.back().name, "mc63");
  std::size_t dimms = 0;
  for (const auto& c : snap.controllers) dimms += c.dimms.size();
  EXPECT_EQ(dimms, kEdacMaxDimms);
  ASSERT_EQ(snap.errors.size(), 2u);
  EXPECT_TRUE(contains(snap.errors[0], "more than 512 memory modules")) << snap.errors[0];
  EXPECT_TRUE(contains(snap.errors[1], "more than 64 memory controllers; stopped reading at mc64")) << snap.errors[1];
  EXPECT_EQ(area(EdacCheck(EdacConfig{}, t.root()).run_at(t0), "edac.uncorrected").status, Status::error);
}

TEST(EdacRiseWindow, RiseIsOverTheWindowAResetIsANewBaselineAndMemoryIsBounded) {
  EdacRiseWindow w(60s);
  EXPECT_EQ(w.observe("k", 1000, t0), 0u);  // the first sample is the baseline, however large
  EXPECT_EQ(w.observe("k", 1010, t0 + 10s), 10u);
  EXPECT_EQ(w.observe("k", 1030, t0 + 50s), 30u);
  EXPECT_EQ(w.observe("k", 1040, t0 + 70s), 30u);  // the t0 sample left the window: 1010 is the baseline
  EXPECT_EQ(w.observe("k", 3, t0 + 80s), 0u);      // reset
  EXPECT_EQ(w.observe("k", 8, t0 + 90s), 5u);
  EXPECT_EQ(w.observe("k", 8, t0 + 200s), 0u);     // quiet past the window
  w.keep_only({});
  EXPECT_EQ(w.keys(), 0u);

  // a 30-day window sampled every 30 s, the counter rising at every sample: bounded history, and the
  // rise over the window never reads lower than the truth (here exactly one per sample)
  EdacRiseWindow month(30 * 24h);
  std::uint64_t rise = 0;
  const std::uint64_t samples = 2 * 30 * 24 * 120;  // 60 days of 30 s sweeps
  for (std::uint64_t i = 0; i < samples; ++i) rise = month.observe("mc0", i, t0 + std::chrono::seconds(30 * i));
  EXPECT_LE(month.samples("mc0"), 130u);
  EXPECT_GE(rise, 30u * 24 * 120);
  EXPECT_LE(rise, 30u * 24 * 120 + 30u * 24 * 120 / 128 + 1);
  // an unchanged counter keeps one sample
  EdacRiseWindow quiet(3600s);
  for (int i = 0; i < 1000; ++i) quiet.observe("mc0", 5, t0 + std::chrono::seconds(30 * i));
  EXPECT_EQ(quiet.samples("mc0"), 1u);
}

TEST(EdacConfig, DefaultsAreDrainOnUncorrectedAndCorrectedShownNotJudged) {
  auto c = parse_config("", "f.toml");
  ASSERT_TRUE(c) << c.error();
  const auto& e = c->section<EdacConfig>();
  EXPECT_TRUE(e.enabled);
  EXPECT_EQ(e.uncorrected_action, Remedy::drain);
  EXPECT_FALSE(e.max_corrected_rise);
  EXPECT_EQ(e.corrected_action, Remedy::warn);
  EXPECT_EQ(e.corrected_window, 3600s);
}

TEST(EdacConfig, ReadsEveryKey) {
  auto c = parse_config(R"(
[checks.edac]
enabled = false
uncorrected_action = "reboot"
max_corrected_rise = 250
corrected_action = "drain"
corrected_window_s = 86400
)",
                        "f.toml");
  ASSERT_TRUE(c) << c.error();
  const auto& e = c->section<EdacConfig>();
  EXPECT_FALSE(e.enabled);
  EXPECT_EQ(e.uncorrected_action, Remedy::reboot);
  EXPECT_EQ(e.max_corrected_rise, 250u);
  EXPECT_EQ(e.corrected_action, Remedy::drain);
  EXPECT_EQ(e.corrected_window, 86400s);
}

TEST(EdacConfig, AnUnknownKeyNamesFileLineColumnAndTheClosestKey) {
  auto c = parse_config("[checks.edac]\nenabled = true\n  max_corected_rise = 5\n", "f.toml");
  ASSERT_FALSE(c);
  EXPECT_TRUE(contains(c.error(), "f.toml:3:3: unknown key 'max_corected_rise' in [checks.edac]; did you mean "
                                  "'max_corrected_rise'?")) << c.error();
  EXPECT_TRUE(contains(c.error(), "known: corrected_action, corrected_window_s, enabled, max_corrected_rise, uncorrected_action"))
      << c.error();
}

TEST(EdacConfig, BadValuesAreRefusedWithTheirPosition) {
  struct Case {
    const char* text;
    const char* where;
    const char* what;
  };
  for (const auto& k : {Case{"[checks.edac]\nuncorrected_action = \"explode\"\n", "f.toml:2:", "must be one of"},
                        Case{"[checks.edac]\ncorrected_action = \"restart_app\"\n", "f.toml:2:", "must be one of"},
                        Case{"[checks.edac]\nuncorrected_action = 1\n", "f.toml:2:", "must be one of"},
                        Case{"[checks.edac]\nmax_corrected_rise = -1\n", "f.toml:2:", "max_corrected_rise"},
                        Case{"[checks.edac]\ncorrected_window_s = 59\n", "f.toml:2:", "between 60 and 2592000"},
                        Case{"[checks.edac]\ncorrected_window_s = 2592001\n", "f.toml:2:", "between 60 and 2592000"},
                        Case{"[checks.edac]\nenabled = \"yes\"\n", "f.toml:2:", "enabled"},
                        Case{"[checks]\nedac = 1\n", "f.toml:", "edac"}}) {
    auto c = parse_config(k.text, "f.toml");
    ASSERT_FALSE(c) << k.text;
    EXPECT_TRUE(contains(c.error(), k.where)) << c.error();
    EXPECT_TRUE(contains(c.error(), k.what)) << c.error();
  }
}

TEST(EdacConfig, TheRegistryBuildsTheCheckOnlyWhenEnabled) {
  const CheckKind* kind = nullptr;
  for (const auto& k : check_kinds())
    if (k.section.name == "edac") kind = &k;
  ASSERT_NE(kind, nullptr);
  BuildContext context;
  context.host_root = "/nonexistent-host-root";
  auto on = parse_config("", "f.toml");
  ASSERT_TRUE(on) << on.error();
  auto built = kind->build(on->section<EdacConfig>(), context);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(built[0]->name(), "edac");
  EXPECT_EQ(area(built[0]->run(), "edac.uncorrected").message,
            "not applicable: no EDAC driver loaded (no /sys/devices/system/edac/mc; common on VMs)");
  auto off = parse_config("[checks.edac]\nenabled = false\n", "f.toml");
  ASSERT_TRUE(off) << off.error();
  EXPECT_TRUE(kind->build(off->section<EdacConfig>(), context).empty());
}
