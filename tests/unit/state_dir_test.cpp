// The state directory must be healthd's alone (SECURITY.md).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/state_dir.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;

TEST(StateDir, WorldWritableIsMadePrivateToItsOwner) {
  ar::test::TempDir dir;
  const auto state = dir / "state";
  std::filesystem::create_directory(state);
  ASSERT_EQ(::chmod(state.c_str(), 0777), 0);
  ASSERT_TRUE(secure_state_dir(state));
  struct stat st {};
  ASSERT_EQ(::stat(state.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// SECURITY.md promises 0700: a directory other users may list or read (the mode mkdir gives under
// the usual umask) would show them every job's registry entry and timeline.
TEST(StateDir, ReadableByOthersIsMadePrivateToItsOwner) {
  ar::test::TempDir dir;
  const auto state = dir / "state";
  std::filesystem::create_directory(state);
  ASSERT_EQ(::chmod(state.c_str(), 0755), 0);
  ASSERT_TRUE(secure_state_dir(state));
  struct stat st {};
  ASSERT_EQ(::stat(state.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(StateDir, OneOwnedBySomeoneElseIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the directory away";
  ar::test::TempDir dir;
  const auto state = dir / "state";
  std::filesystem::create_directory(state);
  ASSERT_EQ(::chown(state.c_str(), 65534, 65534), 0);
  auto r = secure_state_dir(state);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("owned by uid 65534"), std::string::npos) << r.error();
}

TEST(StateDir, AFileIsRefused) {
  ar::test::TempDir dir;
  { FILE* f = std::fopen((dir / "state").c_str(), "w"); std::fclose(f); }
  auto r = secure_state_dir(dir / "state");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not a directory"), std::string::npos);
}
