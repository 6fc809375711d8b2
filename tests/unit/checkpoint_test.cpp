#include <fstream>

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "checkpoint.hpp"
#include "temp_dir.hpp"

using ar::plugin::newest_complete_checkpoint;
namespace fs = std::filesystem;

namespace {

// Makes DIR/name, with a COMPLETE marker stamped at `mtime` seconds when complete.
void make_checkpoint(const fs::path& dir, const std::string& name, bool complete, time_t mtime) {
  fs::create_directories(dir / name);
  std::ofstream(dir / name / "state") << "step=1\n";
  if (!complete) return;
  auto marker = dir / name / "COMPLETE";
  std::ofstream(marker).put('\n');
  timespec times[2] = {{mtime, 0}, {mtime, 0}};
  ::utimensat(AT_FDCWD, marker.c_str(), times, 0);
}

}  // namespace

TEST(Checkpoint, NewestCompleteByMarkerTime) {
  ar::test::TempDir d;
  make_checkpoint(d.path(), "step-00000002", true, 2000);
  make_checkpoint(d.path(), "step-00000003", true, 3000);
  make_checkpoint(d.path(), "step-00000001", true, 1000);
  auto r = newest_complete_checkpoint(d.path());
  ASSERT_TRUE(r) << r.error();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->filename(), "step-00000003");
}

TEST(Checkpoint, PartialNewerCheckpointIsSkipped) {
  ar::test::TempDir d;
  make_checkpoint(d.path(), "step-00000001", true, 1000);
  make_checkpoint(d.path(), "step-00000002", false, 0);  // cut short by the fault
  auto r = newest_complete_checkpoint(d.path());
  ASSERT_TRUE(r && r->has_value());
  EXPECT_EQ((*r)->filename(), "step-00000001");
}

TEST(Checkpoint, MarkerMustBeARegularFile) {
  ar::test::TempDir d;
  make_checkpoint(d.path(), "a", true, 1000);
  fs::create_directories(d / "b" / "COMPLETE");  // a directory named COMPLETE is corrupt, not complete
  std::ofstream(d / "COMPLETE");                  // a stray file at the top is no checkpoint
  auto r = newest_complete_checkpoint(d.path());
  ASSERT_TRUE(r && r->has_value());
  EXPECT_EQ((*r)->filename(), "a");
}

TEST(Checkpoint, EqualTimesPickTheNameSortingLast) {
  ar::test::TempDir d;
  make_checkpoint(d.path(), "step-b", true, 5000);
  make_checkpoint(d.path(), "step-a", true, 5000);
  auto r = newest_complete_checkpoint(d.path());
  ASSERT_TRUE(r && r->has_value());
  EXPECT_EQ((*r)->filename(), "step-b");
}

TEST(Checkpoint, NoneAndUnreadable) {
  ar::test::TempDir d;
  auto empty = newest_complete_checkpoint(d.path());
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->has_value());
  make_checkpoint(d.path(), "only-partial", false, 0);
  auto partial = newest_complete_checkpoint(d.path());
  ASSERT_TRUE(partial);
  EXPECT_FALSE(partial->has_value());
  auto missing = newest_complete_checkpoint(d / "nope");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("nope"), std::string::npos);
}
