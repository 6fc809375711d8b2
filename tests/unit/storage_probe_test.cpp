// The storage probe against what a local user can plant in the directory it writes in (issue 10,
// item 4): things at the old predictable name, a directory full of look-alike names, and the
// probe directory an admin chooses. A real temp directory is the mount, under a fake host root.
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks/storage/storage_check.hpp"
#include "config/config.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Mount {
  ar::test::TempDir dir;
  StorageConfig config;
  fs::path root() const { return dir / "fsx"; }
  Mount() {
    fs::create_directories(dir / "proc");
    fs::create_directories(root());
    std::ofstream(dir / "proc/mounts") << "fs@tcp:/fsx /fsx lustre rw,flock 0 0\n";
    StorageMountConfig m;
    m.path = "/fsx";
    m.fstype = "lustre";
    config.mounts = {m};
    config.probe_timeout = 2s;
  }
  // One sweep, timed: a probe that blocks shows as a sweep that takes the whole probe_timeout.
  CheckResult sweep(StorageCheck& check) const {
    const auto start = std::chrono::steady_clock::now();
    auto r = check.run();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "the probe blocked";
    EXPECT_EQ(r.size(), 1u);
    return r.at(0);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string hex_name(const std::string& prefix, unsigned n) {
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016x", n);
  return prefix + suffix;
}

// The old predictable probe name of node n1.
constexpr const char* kOldName = ".healthd-probe.n1";

}  // namespace

TEST(StorageProbe, ADirectoryAtTheOldProbeNameIsNoFault) {
  Mount m;
  fs::create_directory(m.root() / kOldName);
  StorageCheck check(m.config, m.dir.path(), "n1");
  for (int sweep = 0; sweep < 3; ++sweep) {
    auto r = m.sweep(check);
    EXPECT_EQ(r.status, Status::ok) << r.message;
  }
  EXPECT_TRUE(fs::is_directory(m.root() / kOldName));
  EXPECT_EQ(std::distance(fs::directory_iterator(m.root()), {}), 1);  // the probe left nothing of its own
}

TEST(StorageProbe, AFifoAtTheOldProbeNameNeitherHangsNorFaults) {
  Mount m;
  ASSERT_EQ(::mkfifo((m.root() / kOldName).c_str(), 0666), 0);
  StorageCheck check(m.config, m.dir.path(), "n1");
  for (int sweep = 0; sweep < 3; ++sweep) {
    auto r = m.sweep(check);
    EXPECT_EQ(r.status, Status::ok) << r.message;
  }
  EXPECT_TRUE(fs::is_fifo(m.root() / kOldName));
}

TEST(StorageProbe, ASymlinkAtTheOldProbeNameIsNotFollowed) {
  Mount m;
  std::ofstream(m.dir / "precious") << "keep me\n";
  fs::create_symlink(m.dir / "precious", m.root() / kOldName);
  StorageCheck check(m.config, m.dir.path(), "n1");
  auto r = m.sweep(check);
  EXPECT_EQ(r.status, Status::ok) << r.message;
  EXPECT_EQ(read_file(m.dir / "precious"), "keep me\n");
  EXPECT_TRUE(fs::is_symlink(m.root() / kOldName));
}

// 1000 names that look like this node's probe files, of every kind a user can make, and a few real
// leftovers of ours from a crash: the check stays healthy, the leftovers go, nothing else is touched.
TEST(StorageProbe, AThousandPlantedLookAlikesAreHarmlessAndOnlyOurLeftoversGo) {
  Mount m;
  const auto prefix = probe_prefix("n1");
  ASSERT_EQ(prefix, ".healthd-probe.n1.");
  std::ofstream(m.dir / "precious") << "keep me\n";
  std::ofstream(m.dir / "linked") << "linked\n";
  const bool root = ::geteuid() == 0;
  std::vector<fs::path> planted;
  for (unsigned i = 0; i < 1000; ++i) {
    const auto p = m.root() / hex_name(prefix, i);
    switch (i % 5) {
      case 0: fs::create_directory(p); break;
      case 1: ASSERT_EQ(::mkfifo(p.c_str(), 0666), 0); break;
      case 2: fs::create_symlink(m.dir / "precious", p); break;
      case 3: fs::create_hard_link(m.dir / "linked", p); break;  // a second link to a file: not a leftover
      case 4:
        std::ofstream(p) << "someone else's\n";
        if (root) {
          ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0);  // a user's file
        } else {
          fs::rename(p, m.root() / (prefix + "not-hex-" + std::to_string(i)));  // not our name pattern
          planted.push_back(m.root() / (prefix + "not-hex-" + std::to_string(i)));
          continue;
        }
        break;
    }
    planted.push_back(p);
  }
  const std::vector<fs::path> ours = {m.root() / (prefix + "00000000deadbeef"), m.root() / (prefix + "0123456789abcdef")};
  for (const auto& p : ours) std::ofstream(p) << "healthd storage probe\n";
  const auto other_node = m.root() / (probe_prefix("n2") + "00000000deadbeef");
  std::ofstream(other_node) << "n2's leftover is n2's\n";

  StorageCheck check(m.config, m.dir.path(), "n1");
  for (int sweep = 0; sweep < 2; ++sweep) {
    auto r = m.sweep(check);
    EXPECT_EQ(r.status, Status::ok) << r.message;
  }
  for (const auto& p : ours) EXPECT_FALSE(fs::exists(fs::symlink_status(p))) << p;
  for (const auto& p : planted) EXPECT_TRUE(fs::exists(fs::symlink_status(p))) << p;
  EXPECT_TRUE(fs::exists(other_node));
  EXPECT_EQ(read_file(m.dir / "precious"), "keep me\n");
  EXPECT_EQ(read_file(m.dir / "linked"), "linked\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(m.root()), {}), static_cast<std::ptrdiff_t>(planted.size()) + 1);
}

TEST(StorageProbe, ItWritesInTheProbeDirTheAdminChose) {
  Mount m;
  fs::create_directories(m.root() / "healthd/probe");
  m.config.mounts[0].probe_dir = "healthd/probe";
  std::vector<ProbeOptions> asked;
  StorageCheck check(m.config, m.dir.path(), "n1", [&asked](const fs::path& mount, const ProbeOptions& probe) {
    asked.push_back(probe);
    return sample_filesystem(mount, probe);
  });
  auto r = m.sweep(check);
  EXPECT_EQ(r.status, Status::ok) << r.message;
  r = m.sweep(check);
  EXPECT_EQ(r.status, Status::ok) << r.message;
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].dir, "healthd/probe");
  EXPECT_EQ(asked[0].prefix, ".healthd-probe.n1.");
  EXPECT_TRUE(asked[0].remove_stale);
  EXPECT_FALSE(asked[1].remove_stale);  // leftovers are looked for once, not in every sweep
  EXPECT_TRUE(fs::is_empty(m.root() / "healthd/probe"));
}

TEST(StorageProbe, AProbeDirThatIsNoDirectoryIsUnwritable) {
  Mount m;
  m.config.mounts[0].probe_dir = "probe";
  std::ofstream(m.root() / "probe") << "a file where the directory should be\n";
  StorageCheck check(m.config, m.dir.path(), "n1");
  auto r = m.sweep(check);
  EXPECT_EQ(r.status, Status::fault);
  EXPECT_EQ(r.code, "STORAGE-UNWRITABLE");
  EXPECT_EQ(r.message, "storage: /fsx: probe write failed: open probe_dir probe: Not a directory");

  // A FIFO there does not block the open either.
  fs::remove(m.root() / "probe");
  ASSERT_EQ(::mkfifo((m.root() / "probe").c_str(), 0666), 0);
  r = m.sweep(check);
  EXPECT_EQ(r.code, "STORAGE-UNWRITABLE") << r.message;
}

TEST(StorageProbe, ALinkOnTheWayToTheProbeDirIsNotFollowed) {
  Mount m;
  fs::create_directories(m.dir / "elsewhere");
  fs::create_directories(m.root() / "a");
  fs::create_directory_symlink(m.dir / "elsewhere", m.root() / "a/probe");
  m.config.mounts[0].probe_dir = "a/probe";
  StorageCheck check(m.config, m.dir.path(), "n1");
  auto r = m.sweep(check);
  EXPECT_EQ(r.code, "STORAGE-UNWRITABLE") << r.message;
  EXPECT_NE(r.message.find("open probe_dir a/probe: "), std::string::npos) << r.message;
  EXPECT_TRUE(fs::is_empty(m.dir / "elsewhere"));
}

// What a real read-only filesystem does (root ignores modes, so 0500 would not stop it): a
// read-only bind mount of the probe directory. Needs CAP_SYS_ADMIN; skipped without it.
TEST(StorageProbe, AReadOnlyProbeDirIsUnwritable) {
  Mount m;
  const auto dir = m.root() / "ro";
  fs::create_directories(dir);
  if (::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0) GTEST_SKIP() << "no bind mounts here";
  struct Unmount {
    fs::path dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{dir};
  ASSERT_EQ(::mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0) << std::strerror(errno);
  m.config.mounts[0].probe_dir = "ro";
  StorageCheck check(m.config, m.dir.path(), "n1");
  auto r = m.sweep(check);
  EXPECT_EQ(r.code, "STORAGE-UNWRITABLE") << r.message;
  EXPECT_EQ(r.message, "storage: /fsx: probe write failed: create: Read-only file system");
}

// The names the probe creates, seen through inotify: this node's prefix, 16 hex digits, never twice.
TEST(StorageProbe, EachProbeFileHasAFreshRandomName) {
  Mount m;
  const int in = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(in, 0);
  ASSERT_GE(::inotify_add_watch(in, m.root().c_str(), IN_CREATE), 0);
  const ProbeOptions probe{.enabled = true, .dir = {}, .prefix = probe_prefix("n1"), .remove_stale = false};
  for (int i = 0; i < 3; ++i) {
    auto s = sample_filesystem(m.root(), probe);
    EXPECT_TRUE(s.probed);
    EXPECT_EQ(s.probe_error, "");
  }
  alignas(inotify_event) char buffer[4096];
  const ssize_t n = ::read(in, buffer, sizeof buffer);
  ::close(in);
  ASSERT_GT(n, 0);
  std::set<std::string> names;
  for (ssize_t at = 0; at < n;) {
    const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
    names.insert(e->name);
    at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
  }
  ASSERT_EQ(names.size(), 3u);
  for (const auto& name : names) {
    EXPECT_TRUE(name.starts_with(".healthd-probe.n1.")) << name;
    EXPECT_EQ(name.size(), std::string(".healthd-probe.n1.").size() + 16) << name;
    EXPECT_EQ(name.find_first_not_of("0123456789abcdef", 18), std::string::npos) << name;
  }
  EXPECT_TRUE(fs::is_empty(m.root()));
}
