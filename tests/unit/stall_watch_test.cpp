// The progress watchdog: heartbeats read from a real directory, stalls judged on a fake clock, and
// what the responder does with a stall (requeue once with STALL, only from the batch script's node,
// after the settle time; cancel or warn as the admin says; a fault found meanwhile goes first).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "collectors/heartbeat_reader.hpp"
#include "engine/stall_watch.hpp"
#include "options.hpp"
#include "responder_fixture.hpp"
#include "state/job_registry.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

namespace {

const StallClock::time_point t0 = StallClock::time_point(std::chrono::hours(1000));
const FileTime f0 = FileTime(std::chrono::seconds(1'800'000'000));
constexpr auto kSettle = 10s;

constexpr std::uint32_t kOwner = 1000;

// A heartbeat the test moves by hand: path -> reading; and whose rights each read asked for.
struct FakeBeats {
  std::map<std::string, HeartbeatReading> readings;
  std::vector<std::uint32_t> read_as;
  HeartbeatReader reader() {
    return [this](const std::string& path, std::uint32_t uid) {
      read_as.push_back(uid);
      auto it = readings.find(path);
      return it == readings.end() ? HeartbeatReading{} : it->second;
    };
  }
  void beat(const std::string& path, FileTime at) { readings[path] = {at, {}, true}; }
};

WatchedJob watched(std::uint32_t restart_count = 0, std::uint32_t stall_s = 60, std::uint32_t first_s = 300) {
  return {7, restart_count, std::nullopt, ar::proto::Heartbeat{"/ckpt/hb", stall_s, first_s}, kOwner};
}

std::vector<StallEvent::Kind> kinds(const std::vector<StallEvent>& events) {
  std::vector<StallEvent::Kind> out;
  for (const auto& e : events) out.push_back(e.kind);
  return out;
}
using K = StallEvent::Kind;

}  // namespace

TEST(StallWatch, NoFirstBeatWithinItsTimeIsAStallConfirmedAfterTheSettleTimeOnce) {
  FakeBeats beats;
  beats.beat("/ckpt/hb", f0 - 1h);  // the last attempt's beat: not one of this attempt
  StallWatch watch(beats.reader());
  EXPECT_TRUE(watch.poll({watched()}, t0, kSettle).empty());
  EXPECT_TRUE(watch.poll({watched()}, t0 + 299s, kSettle).empty());
  auto stalled = watch.poll({watched()}, t0 + 300s, kSettle);
  ASSERT_EQ(kinds(stalled), std::vector{K::stalled});
  EXPECT_EQ(stalled[0].message, "no first beat of heartbeat /ckpt/hb within 300 s (first-beat time 300 s)");
  EXPECT_TRUE(watch.poll({watched()}, t0 + 309s, kSettle).empty());
  EXPECT_EQ(kinds(watch.poll({watched()}, t0 + 310s, kSettle)), std::vector{K::confirmed});
  EXPECT_TRUE(watch.poll({watched()}, t0 + 900s, kSettle).empty()) << "an attempt is confirmed once";
}

TEST(StallWatch, ABeatingJobNeverStalls) {
  FakeBeats beats;
  StallWatch watch(beats.reader());
  for (int i = 0; i < 100; ++i) {
    beats.beat("/ckpt/hb", f0 + std::chrono::seconds(30 * i));
    EXPECT_TRUE(watch.poll({watched()}, t0 + std::chrono::seconds(30 * i), kSettle).empty()) << i;
  }
}

TEST(StallWatch, AfterTheFirstBeatTheStallTimeCounts) {
  FakeBeats beats;
  beats.beat("/ckpt/hb", f0);
  StallWatch watch(beats.reader());
  EXPECT_TRUE(watch.poll({watched()}, t0, kSettle).empty());
  beats.beat("/ckpt/hb", f0 + 5s);  // the first beat
  EXPECT_TRUE(watch.poll({watched()}, t0 + 10s, kSettle).empty());
  EXPECT_TRUE(watch.poll({watched()}, t0 + 69s, kSettle).empty());
  auto stalled = watch.poll({watched()}, t0 + 70s, kSettle);
  ASSERT_EQ(kinds(stalled), std::vector{K::stalled});
  EXPECT_EQ(stalled[0].message, "heartbeat /ckpt/hb has not moved for 60 s (stall time 60 s)");
}

TEST(StallWatch, ABeatWithinTheSettleTimeCallsTheStallOff) {
  FakeBeats beats;
  beats.beat("/ckpt/hb", f0);
  StallWatch watch(beats.reader());
  watch.poll({watched()}, t0, kSettle);
  ASSERT_EQ(kinds(watch.poll({watched()}, t0 + 300s, kSettle)), std::vector{K::stalled});
  beats.beat("/ckpt/hb", f0 + 301s);
  EXPECT_EQ(kinds(watch.poll({watched()}, t0 + 305s, kSettle)), std::vector{K::moving_again});
  EXPECT_TRUE(watch.poll({watched()}, t0 + 320s, kSettle).empty()) << "not confirmed: it moved";
  EXPECT_EQ(kinds(watch.poll({watched()}, t0 + 365s, kSettle)), std::vector{K::stalled}) << "stall time from the beat";
}

TEST(StallWatch, ANewAttemptStartsOverAndMayStallAgain) {
  FakeBeats beats;
  beats.beat("/ckpt/hb", f0);
  StallWatch watch(beats.reader());
  watch.poll({watched(0)}, t0, kSettle);
  watch.poll({watched(0)}, t0 + 300s, kSettle);
  ASSERT_EQ(kinds(watch.poll({watched(0)}, t0 + 310s, kSettle)), std::vector{K::confirmed});
  EXPECT_TRUE(watch.poll({watched(1)}, t0 + 311s, kSettle).empty());
  EXPECT_TRUE(watch.poll({watched(1)}, t0 + 610s, kSettle).empty());
  EXPECT_EQ(kinds(watch.poll({watched(1)}, t0 + 611s, kSettle)), std::vector{K::stalled});
}

TEST(StallWatch, AnUnreadableHeartbeatIsNeitherABeatNorAStall) {
  FakeBeats beats;
  StallWatch watch(beats.reader());
  beats.beat("/ckpt/hb", f0);
  watch.poll({watched()}, t0, kSettle);
  beats.readings["/ckpt/hb"] = {std::nullopt, "/ckpt/hb: not read within 2000 ms (a hung filesystem?)"};
  EXPECT_TRUE(watch.poll({watched()}, t0 + 400s, kSettle).empty());
  EXPECT_TRUE(watch.poll({watched()}, t0 + 800s, kSettle).empty());
  beats.beat("/ckpt/hb", f0);  // readable again, and it has not moved: the time went on counting
  EXPECT_EQ(kinds(watch.poll({watched()}, t0 + 801s, kSettle)), std::vector{K::stalled});
}

TEST(StallWatch, AHeartbeatNeverSeenOnThisHostIsSaidOnceAndNeverActedOn) {
  FakeBeats beats;  // nothing at /ckpt/hb: a per-job /tmp, a file on another node's disk
  StallWatch watch(beats.reader());
  watch.poll({watched()}, t0, kSettle);
  auto said = watch.poll({watched()}, t0 + 300s, kSettle);
  ASSERT_EQ(kinds(said), std::vector{K::never_seen});
  EXPECT_NE(said[0].message.find("not judged"), std::string::npos);
  EXPECT_TRUE(watch.poll({watched()}, t0 + 1h, kSettle).empty());
}

TEST(StallWatch, TheHeartbeatIsReadAsTheJobsOwnerAndWithoutOneNotAtAll) {
  FakeBeats beats;
  beats.beat("/ckpt/hb", f0);
  StallWatch watch(beats.reader());
  watch.poll({watched()}, t0, kSettle);
  EXPECT_EQ(beats.read_as, std::vector<std::uint32_t>{kOwner});
  WatchedJob ownerless = watched(1);
  ownerless.uid.reset();
  for (auto at : {t0 + 1s, t0 + 400s, t0 + 800s}) EXPECT_TRUE(watch.poll({ownerless}, at, kSettle).empty());
  EXPECT_EQ(beats.read_as.size(), 1u) << "never read as root on the owner's behalf";
}

TEST(StallWatch, AnEmptyDirectoryIsThereAndAJobThatNeverWritesInItStalls) {
  FakeBeats beats;
  beats.readings["/ckpt/hb"] = {std::nullopt, {}, true};  // found, but nothing of the owner's in it
  StallWatch watch(beats.reader());
  watch.poll({watched()}, t0, kSettle);
  EXPECT_EQ(kinds(watch.poll({watched()}, t0 + 300s, kSettle)), std::vector{K::stalled});
}

TEST(StallWatch, AJobNoLongerRunningIsForgotten) {
  FakeBeats beats;
  StallWatch watch(beats.reader());
  watch.poll({watched()}, t0, kSettle);
  EXPECT_EQ(watch.watched(), 1u);
  watch.poll({}, t0 + 1s, kSettle);
  EXPECT_EQ(watch.watched(), 0u);
}

namespace {

const uid_t kNobody = 65534;

FileTime wall_now() { return std::chrono::system_clock::now(); }

// `file` (or a link, not followed) stamped `at`.
void stamp(const std::filesystem::path& file, FileTime at) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  const struct timespec times[2] = {{ns / 1'000'000'000, ns % 1'000'000'000}, {ns / 1'000'000'000, ns % 1'000'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << file;
}

// A file owned by `uid`, stamped `at`.
void write_beat(const std::filesystem::path& file, uid_t uid, FileTime at) {
  std::ofstream(file) << "x";
  ASSERT_EQ(::lchown(file.c_str(), uid, static_cast<gid_t>(-1)), 0) << file;
  stamp(file, at);
}

FileTime seconds_after_epoch(std::int64_t s) { return FileTime(std::chrono::seconds(s)); }

// The calling thread's filesystem identity, as the kernel has it.
std::tuple<long, long, std::vector<gid_t>> thread_identity() {
  std::vector<gid_t> groups(static_cast<std::size_t>(::getgroups(0, nullptr)));
  groups.resize(static_cast<std::size_t>(::getgroups(static_cast<int>(groups.size()), groups.data())));
  return {::syscall(SYS_setfsuid, -1), ::syscall(SYS_setfsgid, -1), groups};
}

#define NEEDS_ROOT()                                                                        \
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to own files as others and take their rights " \
                                        "(CI runs the unit tests as root)"

// A tree where uid `nobody` may look: root/ (0755), root/secret/ (root's, 0700) holding `file`,
// and root/mine/ (nobody's) where nobody writes.
struct UserTree {
  ar::test::TempDir dir;
  std::filesystem::path secret = dir / "secret";
  std::filesystem::path mine = dir / "mine";
  UserTree() {
    std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
    std::filesystem::create_directory(secret);
    std::filesystem::permissions(secret, std::filesystem::perms(0700));
    std::ofstream(secret / "file") << "root's";
    std::filesystem::create_directory(mine);
    EXPECT_EQ(::chown(mine.c_str(), kNobody, static_cast<gid_t>(-1)), 0);
  }
};

// An error with its path taken off: what it says of the path.
std::string said(const HeartbeatReading& r, const std::filesystem::path& path) {
  return r.error.rfind(path.string(), 0) == 0 ? r.error.substr(path.string().size()) : r.error;
}

}  // namespace

TEST(ReadHeartbeat, AFileByItsModificationTimeADirectoryByItsNewestEntryNotItsOwnTime) {
  ar::test::TempDir dir;
  const uid_t me = ::geteuid();
  const auto missing = read_heartbeat((dir / "missing").string(), me, wall_now());
  EXPECT_FALSE(missing.newest);
  EXPECT_FALSE(missing.found);
  EXPECT_TRUE(missing.error.empty());
  auto empty = read_heartbeat(dir.path().string(), me, wall_now());
  EXPECT_TRUE(empty.found) << "there, with nothing in it yet";
  EXPECT_FALSE(empty.newest);
  std::ofstream(dir / "old") << "x";
  std::ofstream(dir / "new") << "x";
  const auto base = std::filesystem::last_write_time(dir / "old");
  std::filesystem::last_write_time(dir / "old", base - 100s);
  std::filesystem::last_write_time(dir / "new", base + 10s);
  std::filesystem::last_write_time(dir.path(), base + 20s);  // anyone who may write there moves it
  auto file = read_heartbeat((dir / "old").string(), me, wall_now());
  auto whole = read_heartbeat(dir.path().string(), me, wall_now());
  ASSERT_TRUE(file.newest && whole.newest);
  EXPECT_EQ(*whole.newest - *file.newest, std::chrono::duration_cast<StallClock::duration>(110s));
}

TEST(ReadHeartbeat, TooManyEntriesIsNotJudged) {
  ar::test::TempDir dir;
  for (int i = 0; i < 5; ++i) std::ofstream(dir / std::to_string(i)) << "x";
  EXPECT_TRUE(read_heartbeat(dir.path().string(), ::geteuid(), wall_now(), 5).error.empty());
  auto r = read_heartbeat(dir.path().string(), ::geteuid(), wall_now(), 4);
  EXPECT_NE(r.error.find("more than 4 entries"), std::string::npos) << r.error;
  EXPECT_FALSE(r.newest);
}

TEST(ReadHeartbeat, AFifoOrALinkNeverBlocksNorIsFollowedInADirectory) {
  ar::test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::filesystem::create_directory_symlink("/proc", dir / "proc");
  auto r = read_heartbeat(dir.path().string(), ::geteuid(), wall_now());
  EXPECT_TRUE(r.newest);
  EXPECT_TRUE(r.error.empty()) << r.error;
  auto fifo = read_heartbeat((dir / "fifo").string(), ::geteuid(), wall_now());  // the heartbeat itself
  EXPECT_TRUE(fifo.newest);
  EXPECT_TRUE(fifo.error.empty()) << fifo.error;
}

TEST(ReadHeartbeat, AFileDatedInTheFutureDoesNotPinTheNewest) {
  ar::test::TempDir dir;
  const uid_t me = ::geteuid();
  const auto now = wall_now();
  std::ofstream(dir / "beat") << "x";
  stamp(dir / "beat", now - 1s);
  std::ofstream(dir / "planted") << "x";
  stamp(dir / "planted", seconds_after_epoch(2'051'222'400));  // 2035
  auto r = read_heartbeat(dir.path().string(), me, now);
  ASSERT_TRUE(r.newest) << r.error;
  EXPECT_EQ(*r.newest, std::chrono::time_point_cast<FileTime::duration>(now - 1s));
  stamp(dir / "beat", now + 30s);  // a file server's clock a little ahead: still counts
  r = read_heartbeat(dir.path().string(), me, now);
  ASSERT_TRUE(r.newest);
  EXPECT_EQ(*r.newest, std::chrono::time_point_cast<FileTime::duration>(now + 30s)) << "the job still beats";

  auto file = read_heartbeat((dir / "planted").string(), me, now);
  EXPECT_FALSE(file.newest);
  EXPECT_NE(file.error.find("in the future"), std::string::npos) << file.error;
}

TEST(ReadHeartbeat, OnlyTheJobOwnersFilesCount) {
  NEEDS_ROOT();
  ar::test::TempDir dir;  // a shared directory: the owner's beats, and a co-writer's newer files
  const auto now = wall_now();
  write_beat(dir / "mine", kNobody, now - 100s);
  write_beat(dir / "theirs", 4242, now - 1s);
  write_beat(dir / "theirs-in-2035", 4242, seconds_after_epoch(2'051'222'400));
  auto r = read_heartbeat(dir.path().string(), kNobody, now);
  ASSERT_TRUE(r.newest) << r.error;
  EXPECT_EQ(*r.newest, std::chrono::time_point_cast<FileTime::duration>(now - 100s));

  auto theirs = read_heartbeat((dir / "theirs").string(), kNobody, now);
  EXPECT_FALSE(theirs.newest);
  EXPECT_NE(theirs.error.find("only the job owner's files count"), std::string::npos) << theirs.error;
}

TEST(ReadHeartbeatAsOwner, NoOracleAFileInADirectoryTheUserCannotSearchReadsAsAMissingOne) {
  NEEDS_ROOT();
  UserTree tree;
  const auto there = read_heartbeat_as_owner((tree.secret / "file").string(), kNobody);
  const auto missing = read_heartbeat_as_owner((tree.secret / "missing").string(), kNobody);
  EXPECT_FALSE(there.newest);
  EXPECT_FALSE(there.found);
  EXPECT_FALSE(missing.newest);
  EXPECT_FALSE(missing.found);
  EXPECT_FALSE(there.error.empty()) << "not judged, never \"nothing there\" nor a time";
  EXPECT_EQ(said(there, tree.secret / "file"), said(missing, tree.secret / "missing"));
  auto listed = read_heartbeat_as_owner(tree.secret.string(), kNobody);
  EXPECT_FALSE(listed.newest);
  EXPECT_FALSE(listed.error.empty());
  // Root reading its own job's heartbeat sees it: what differs is whose rights the read has.
  EXPECT_TRUE(read_heartbeat_as_owner((tree.secret / "file").string(), 0).newest);
}

TEST(ReadHeartbeatAsOwner, ALinkToARootOnlyFileIsNotFollowedAsRoot) {
  NEEDS_ROOT();
  UserTree tree;
  std::filesystem::create_symlink(tree.secret / "file", tree.mine / "link");
  ASSERT_EQ(::lchown((tree.mine / "link").c_str(), kNobody, static_cast<gid_t>(-1)), 0);
  stamp(tree.mine / "link", seconds_after_epoch(1'700'000'000));
  auto r = read_heartbeat_as_owner((tree.mine / "link").string(), kNobody);
  EXPECT_FALSE(r.newest);
  EXPECT_NE(r.error.find("Permission denied"), std::string::npos) << r.error;
  // In a directory the link counts by its own time (the user's), never by what it points at.
  auto dir = read_heartbeat_as_owner(tree.mine.string(), kNobody);
  ASSERT_TRUE(dir.newest) << dir.error;
  EXPECT_EQ(*dir.newest, seconds_after_epoch(1'700'000'000));
}

TEST(ReadHeartbeatAsOwner, TheOwnersGroupsCount) {
  NEEDS_ROOT();
  UserTree tree;
  const auto shared = tree.dir / "group";  // root's, readable by nobody's group only
  std::filesystem::create_directory(shared);
  ASSERT_EQ(::chown(shared.c_str(), 0, kNobody), 0);
  std::filesystem::permissions(shared, std::filesystem::perms(0750));
  write_beat(shared / "beat", kNobody, wall_now() - 5s);
  auto r = read_heartbeat_as_owner(shared.string(), kNobody);
  EXPECT_TRUE(r.newest) << r.error;
}

TEST(ReadHeartbeatAsOwner, AnOwnerUnknownHereIsNotJudgedNeverReadAsRoot) {
  NEEDS_ROOT();
  UserTree tree;
  write_beat(tree.dir / "beat", 3'999'999'999u, wall_now());
  auto r = read_heartbeat_as_owner((tree.dir / "beat").string(), 3'999'999'999u);
  EXPECT_FALSE(r.newest);
  EXPECT_NE(r.error.find("no passwd entry"), std::string::npos) << r.error;
}

TEST(ReadHeartbeatAsOwner, TheThreadHasItsOwnIdentityBackAfterEachRead) {
  NEEDS_ROOT();
  UserTree tree;
  const auto before = thread_identity();
  (void)read_heartbeat_as_owner((tree.secret / "file").string(), kNobody);
  EXPECT_EQ(thread_identity(), before);
  EXPECT_TRUE(std::ifstream(tree.secret / "file").good()) << "root's rights are back";
  const UserIdentity nobody{kNobody, kNobody, {kNobody, 4242}};
  std::tuple<long, long, std::vector<gid_t>> during;
  bool refused_root_file = false;
  EXPECT_TRUE(with_fs_identity(nobody, [&] {
    during = thread_identity();
    refused_root_file = !std::ifstream(tree.secret / "file").good();
  }));
  EXPECT_EQ(during, std::make_tuple(long{kNobody}, long{kNobody}, std::vector<gid_t>{4242, kNobody}));  // sorted
  EXPECT_TRUE(refused_root_file) << "no capability of root's left to bypass the permissions";
  EXPECT_EQ(thread_identity(), before);
}

TEST(ReadHeartbeatAsOwner, TheBoundedReaderReusesItsThreadsAndNeverLeavesThemAsAUser) {
  NEEDS_ROOT();
  UserTree tree;
  write_beat(tree.mine / "beat", kNobody, wall_now() - 5s);
  auto reader = bounded_heartbeat_reader(2s);
  const auto before = thread_identity();
  for (int i = 0; i < 3; ++i) {
    const auto there = reader((tree.secret / "file").string(), kNobody);
    const auto missing = reader((tree.secret / "missing").string(), kNobody);
    EXPECT_FALSE(there.newest);
    EXPECT_FALSE(there.error.empty());
    EXPECT_EQ(said(there, tree.secret / "file"), said(missing, tree.secret / "missing"));
    // The same thread (one per path), as root's job and as the user's, in turn.
    EXPECT_TRUE(reader((tree.secret / "file").string(), 0).newest) << i;
    EXPECT_TRUE(reader((tree.mine / "beat").string(), kNobody).newest) << i;
  }
  EXPECT_EQ(thread_identity(), before);
}

TEST(HeartbeatOptions, StallTimesAndTheirDefaults) {
  using ar::plugin::parse_stall;
  EXPECT_EQ(parse_stall("300")->stall_s, 300u);
  EXPECT_EQ(parse_stall("300")->first_beat_s, 1800u);
  EXPECT_EQ(parse_stall("3600")->first_beat_s, 3600u);
  EXPECT_EQ(parse_stall("60,5")->stall_s, 60u);
  EXPECT_EQ(parse_stall("60,5")->first_beat_s, 5u);
  for (const char* bad : {"", "0", "x", "5,", ",5", "5,0", "-1", "99999999999", "5,6,7"}) {
    auto r = parse_stall(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("--auto-resume-stall"), std::string::npos);
  }
  EXPECT_FALSE(parse_stall(nullptr));
}

TEST(HeartbeatOptions, TheHeartbeatIsAnAbsolutePath) {
  EXPECT_EQ(*ar::plugin::parse_heartbeat_path("/ckpt/run1"), "/ckpt/run1");
  auto r = ar::plugin::parse_heartbeat_path("ckpt");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("--auto-resume-heartbeat"), std::string::npos);
  EXPECT_FALSE(ar::plugin::parse_heartbeat_path(std::string(5000, '/').c_str()));
  EXPECT_FALSE(ar::plugin::parse_heartbeat_path("/ckpt/\x1b[2Jhb"));  // no terminal escapes into root's logs
  EXPECT_EQ(*ar::plugin::parse_heartbeat_path("/ckpt/\xe6\xb8\xa9\xe5\xba\xa6/hb"), "/ckpt/\xe6\xb8\xa9\xe5\xba\xa6/hb");
  // The C1 controls, as a terminal reads them in UTF-8: CSI (U+009B) and OSC (U+009D); and bytes
  // that are no UTF-8 at all, which a terminal may read as C1 too.
  for (const char* bad : {"/ckpt/\xc2\x9b" "2J/hb", "/ckpt/\xc2\x9d" "0;owned\x07", "/ckpt/\xc2\x85", "/ckpt/\x9b" "2J",
                          "/ckpt/\xc3(", "/ckpt/\xe6\xb8", "/ckpt/\xed\xa0\x80", "/ckpt/\xc0\xaf"}) {
    auto refused = ar::plugin::parse_heartbeat_path(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().find("valid UTF-8 without control characters"), std::string::npos) << refused.error();
  }
}

TEST(HeartbeatProtocol, RoundTripsAndRefusesWhatIsOutOfRange) {
  using namespace ar::proto;
  StepStart s{5, 0, "n1", 1000, true, 0, std::nullopt, Heartbeat{"/ckpt", 60, 5}};
  auto r = parse_request(to_json(Request{s}).dump());
  ASSERT_TRUE(r);
  const auto& back = std::get<StepStart>(*r);
  ASSERT_TRUE(back.heartbeat);
  EXPECT_EQ(back.heartbeat->path, "/ckpt");
  EXPECT_EQ(back.heartbeat->stall_s, 60u);
  EXPECT_EQ(back.heartbeat->first_beat_s, 5u);
  const std::string head = R"({"v":1,"type":"step_start","job_id":1,"step_id":0,"node":"n","uid":0,"auto_resume":true,"restart_count":0,)";
  for (const std::string bad : {R"("heartbeat":"/x")", R"("heartbeat":{"path":"x","stall_s":1,"first_beat_s":1})",
                                R"("heartbeat":{"path":"/x","stall_s":0,"first_beat_s":1})",
                                R"("heartbeat":{"path":"/x","stall_s":1})",
                                R"("heartbeat":{"path":"/x\u0000y","stall_s":1,"first_beat_s":1})",
                                R"("heartbeat":{"path":"/x\ny","stall_s":1,"first_beat_s":1})",
                                R"("heartbeat":{"path":"/x\u009b2Jy","stall_s":1,"first_beat_s":1})",
                                R"("heartbeat":{"path":"/x","stall_s":1,"first_beat_s":99999999})"}) {
    auto e = parse_request(head + bad + "}");
    ASSERT_FALSE(e) << bad;
    EXPECT_NE(e.error().message.find("heartbeat"), std::string::npos) << e.error().message;
  }
}

TEST(HeartbeatRegistry, KeptAcrossARestartAndCheckedWhenReadBack) {
  ar::test::TempDir dir;
  {
    JobRegistry r(dir / "jobs.json");
    r.step_started({5, ar::proto::kBatchStep, "n1", 1000, true, 0, std::nullopt, ar::proto::Heartbeat{"/ckpt", 60, 5}}, f0);
    ASSERT_TRUE(r.save());
  }
  JobRegistry again(dir / "jobs.json");
  ASSERT_TRUE(again.load());
  ASSERT_TRUE(again.jobs().at(5).heartbeat);
  EXPECT_EQ(again.jobs().at(5).heartbeat->stall_s, 60u);
  EXPECT_TRUE(again.jobs().at(5).batch_here());

  std::string text;
  {
    std::ifstream in(dir / "jobs.json");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = text.find("\"path\":\"/ckpt\"");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 14, "\"path\":\"ckpt\"");
  std::ofstream(dir / "jobs.json", std::ios::trunc) << text;
  JobRegistry hostile(dir / "jobs.json");
  auto r = hostile.load();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("heartbeat"), std::string::npos) << r.error();
}

namespace {

// Job 7 on n2, its batch script here, its heartbeat there and never moving; the stall clock moves
// with the fixture's.
struct StallFixture : Fixture {
  FakeBeats beats;
  WallTime start = now;
  explicit StallFixture(PolicyConfig p = {}) : Fixture(p) {
    responder->set_heartbeat_reader(beats.reader());
    responder->set_stall_clock([this] { return t0 + (now - start); });
    beats.beat("/ckpt/hb", f0);
  }
  std::vector<LocalJob> job(bool batch_here = true) {
    LocalJob j{7, slurm.jobs[7].restart_count, true};
    j.uid = kOwner;
    j.heartbeat = ar::proto::Heartbeat{"/ckpt/hb", 3, 3};
    j.batch_here = batch_here;
    return {j};
  }
};

}  // namespace

TEST(StallResponse, TheBatchNodeRequeuesOnceWithStallAfterTheSettleTime) {
  StallFixture f;  // check_interval 1 s, check_deadline 10 s: the settle time is 11 s
  for (int i = 0; i < 4; ++i) f.sweep(false, f.job());
  EXPECT_TRUE(f.timeline.has_event(7, "stall"));
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  for (int i = 0; i < 10; ++i) f.sweep(false, f.job());
  EXPECT_EQ(f.slurm.count("requeue 7"), 0) << "not before every other node had a sweep to act first";
  for (int i = 0; i < 3; ++i) f.sweep(false, f.job());
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_EQ(f.slurm.count("drain n2"), 0) << "a stall on healthy nodes drains nothing";
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("attempt 1 ended: STALL on n2"), std::string::npos)
      << f.slurm.jobs[7].admin_comment;
  for (int i = 0; i < 3; ++i) f.sweep(false, f.job());
  EXPECT_EQ(f.slurm.count("requeue 7"), 1) << "once per attempt";
}

TEST(StallResponse, OnlyTheNodeOfTheBatchScriptWatches) {
  StallFixture f;
  for (int i = 0; i < 20; ++i) f.sweep(false, f.job(false));
  EXPECT_FALSE(f.timeline.has_event(7, "stall"));
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
}

TEST(StallResponse, ABeatWithinTheSettleTimeCallsItOff) {
  StallFixture f;
  for (int i = 0; i < 5; ++i) f.sweep(false, f.job());
  ASSERT_TRUE(f.timeline.has_event(7, "stall"));
  f.beats.beat("/ckpt/hb", f0 + 1s);
  f.sweep(false, f.job());
  EXPECT_TRUE(f.timeline.has_event(7, "moving again"));
  for (int i = 0; i < 2; ++i) f.sweep(false, f.job());  // within the new stall time of 3 s
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
}

TEST(StallResponse, AJobRequeuedForAFaultMeanwhileStartsOver) {
  StallFixture f;
  for (int i = 0; i < 5; ++i) f.sweep(false, f.job());
  ASSERT_TRUE(f.timeline.has_event(7, "stall"));
  f.slurm.jobs[7].restart_count = 1;  // another node found a fault in its sweep and requeued it
  for (int i = 0; i < 10; ++i) f.sweep(false, f.job());  // running again here: its own first-beat time
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
}

TEST(StallResponse, AJobNoLongerRunningWhenTheStallIsConfirmedIsLeftAlone) {
  StallFixture f;
  for (int i = 0; i < 5; ++i) f.sweep(false, f.job());
  f.slurm.jobs[7].state = "SUSPENDED";  // or ended, or cancelled: the registry lags behind
  for (int i = 0; i < 15; ++i) f.sweep(false, f.job());
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_EQ(f.slurm.count("cancel 7"), 0);
  EXPECT_TRUE(f.timeline.has_event(7, "stall: nothing done"));
}

TEST(StallResponse, AFaultFoundAtTheStallIsHandledAsAFault) {
  StallFixture f;
  for (int i = 0; i < 3; ++i) f.sweep(false, f.job());
  f.sweep(true, f.job());
  EXPECT_EQ(f.slurm.count("drain n2"), 1);
  EXPECT_EQ(f.slurm.count("requeue 7"), 1);
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("GPU-XID-79"), std::string::npos);
}

TEST(StallResponse, CancelOrWarnAsTheAdminSays) {
  PolicyConfig cancel;
  cancel.stall_action = StallAction::cancel;
  StallFixture c(cancel);
  for (int i = 0; i < 20; ++i) c.sweep(false, c.job());
  EXPECT_EQ(c.slurm.count("requeue 7"), 0);
  EXPECT_EQ(c.slurm.count("cancel 7"), 1);
  EXPECT_TRUE(c.timeline.has_event(7, "cancelled"));

  PolicyConfig warn;
  warn.stall_action = StallAction::warn;
  StallFixture w(warn);
  for (int i = 0; i < 20; ++i) w.sweep(false, w.job());
  EXPECT_EQ(w.slurm.count("requeue 7"), 0);
  EXPECT_EQ(w.slurm.count("cancel 7"), 0);
  EXPECT_TRUE(w.timeline.has_event(7, "stall: warn only"));
}

TEST(StallResponse, TheResumeCapStillHolds) {
  PolicyConfig p;
  p.max_resumes = 1;
  StallFixture f(p);
  f.slurm.jobs[7].restart_count = 1;
  for (int i = 0; i < 20; ++i) f.sweep(false, f.job());
  EXPECT_EQ(f.slurm.count("requeue 7"), 0);
  EXPECT_NE(f.slurm.jobs[7].admin_comment.find("cap of 1 resumes is reached"), std::string::npos);
  EXPECT_EQ(f.slurm.count("cancel 7"), 1) << "a job making no progress would hold its nodes until its time limit";
  const auto events = f.timeline.events(7);
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events.back().detail.find("the job, making no progress, is cancelled"), std::string::npos) << events.back().detail;
}
