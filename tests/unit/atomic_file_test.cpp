// State files: never written or read through a link or a FIFO planted at their name.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/atomic_file.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;

using ar::test::slurp;

// Issue 10 item 12: the temp file was opened O_CREAT|O_TRUNC and followed a symlink at its name.
TEST(AtomicFile, ASymlinkAtTheTempNameIsReplacedNotFollowed) {
  ar::test::TempDir dir;
  const auto victim = dir / "victim";
  { std::ofstream(victim) << "precious"; }
  std::filesystem::create_symlink(victim, dir / "journal.json.tmp");
  ASSERT_TRUE(write_file_atomically(dir / "journal.json", "{}"));
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(slurp(dir / "journal.json"), "{}");
}

TEST(AtomicFile, AFifoAtTheTempNameDoesNotBlockTheWrite) {
  ar::test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "jobs.json.tmp").c_str(), 0600), 0);
  ASSERT_TRUE(write_file_atomically(dir / "jobs.json", "{\"a\":1}"));
  EXPECT_EQ(slurp(dir / "jobs.json"), "{\"a\":1}");
}

TEST(AtomicFile, ReadingRefusesLinksAndFifosWithoutBlocking) {
  ar::test::TempDir dir;
  { std::ofstream(dir / "real") << "{}"; }
  std::filesystem::create_symlink(dir / "real", dir / "link.json");
  auto linked = read_json_file(dir / "link.json");
  ASSERT_FALSE(linked);
  EXPECT_NE(linked.error().find("link.json"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0600), 0);
  auto fifo = read_json_file(dir / "fifo.json");
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().find("not a regular file"), std::string::npos);
}

TEST(AtomicFile, AMissingFileIsNullAndBrokenJsonNamesTheFile) {
  ar::test::TempDir dir;
  auto none = read_json_file(dir / "none.json");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->is_null());
  { std::ofstream(dir / "bad.json") << "{not json"; }
  auto bad = read_json_file(dir / "bad.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("bad.json: not valid JSON"), std::string::npos);
}

TEST(AtomicFile, StateWithInvalidUtf8IsWrittenNotThrown) {
  ar::test::TempDir dir;
  nlohmann::json j = {{"line", std::string("mce: bad \xff\xfe")}};
  std::string text;
  EXPECT_NO_THROW(text = dump_state(j));
  ASSERT_TRUE(write_file_atomically(dir / "s.json", text));
  auto back = read_json_file(dir / "s.json");
  ASSERT_TRUE(back);
  EXPECT_NE(back->at("line").get<std::string>().find("mce: bad"), std::string::npos);
}
