// The registry's writer thread: the newest text wins, flush() waits for the disk, and nothing handed
// over is lost when the writer stops.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "state/background_writer.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;

namespace {
std::string slurp(const std::filesystem::path& f) {
  std::ifstream in(f);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(BackgroundWriter, TheNewestTextIsOnDiskAfterFlush) {
  ar::test::TempDir dir;
  BackgroundWriter w(dir / "jobs.json");
  for (int i = 0; i < 500; ++i) w.submit("{\"n\":" + std::to_string(i) + "}");
  w.flush();
  EXPECT_EQ(slurp(dir / "jobs.json"), "{\"n\":499}");
}

TEST(BackgroundWriter, StoppingWritesWhatIsPending) {
  ar::test::TempDir dir;
  {
    BackgroundWriter w(dir / "jobs.json");
    w.submit("first");
    w.submit("last");
  }
  EXPECT_EQ(slurp(dir / "jobs.json"), "last");
}
