// Config tooling: drop-in files (FILE.d/*.toml merged in name order), the effective config with
// where each key came from (`healthd --check-config`), and the shipped sample config, whose values
// must be the real defaults (uncommenting it must change nothing).
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "checks/registry.hpp"
#include "daemon.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;

namespace {

std::map<std::string, std::string> by_key(const std::vector<ConfigValue>& values) {
  std::map<std::string, std::string> out;
  for (const auto& v : values) out[v.key] = v.value;
  return out;
}

struct Files {
  ar::test::TempDir dir;
  std::filesystem::path main = dir / "healthd.toml";
  std::filesystem::path drop_ins = dir / "healthd.toml.d";

  explicit Files(const std::string& text) {
    std::ofstream(main) << text;
    std::filesystem::create_directories(drop_ins);
  }
  void drop_in(const std::string& name, const std::string& text) const { std::ofstream(drop_ins / name) << text; }
};

}  // namespace

TEST(DropIns, AreMergedInNameOrderLaterKeysWinAndTablesOfArraysAdd) {
  Files f("[policy]\nmax_resumes = 3\nrecovery_passes = 4\n"
          "[[policy.hook]]\nname = \"main\"\non = [\"drain\"]\ncommand = [\"/bin/true\"]\n");
  // Written out of order: the names decide.
  f.drop_in("20-later.toml", "[policy]\nmax_resumes = 7\n[[policy.hook]]\nname = \"page\"\non = [\"requeue\"]\ncommand = [\"/bin/true\"]\n");
  f.drop_in("10-first.toml", "[policy]\nmax_resumes = 5\n[checks.efa]\nexpected_devices = 4\n");
  // Not drop-ins: an editor's backup, a hidden file, another suffix, a package manager's leftover.
  f.drop_in("30-backup.toml~", "[policy]\nmax_resumes = 99\n");
  f.drop_in(".40-hidden.toml", "[policy]\nmax_resumes = 98\n");
  f.drop_in("50-notes.conf", "this is not TOML");
  f.drop_in("60-old.toml.dpkg-old", "[policy]\nmax_resumes = 97\n");
  auto c = load_config(f.main);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->policy.max_resumes, 7u);
  EXPECT_EQ(c->policy.recovery_passes, 4u);
  ASSERT_EQ(c->policy.hooks.size(), 2u);
  EXPECT_EQ(c->policy.hooks[0].name, "main");
  EXPECT_EQ(c->policy.hooks[1].name, "page");
  ASSERT_EQ(c->files.size(), 3u);
  EXPECT_EQ(c->files[1].filename(), "10-first.toml");
  EXPECT_EQ(c->files[2].filename(), "20-later.toml");
  EXPECT_EQ(c->origins.at("policy.max_resumes"), (f.drop_ins / "20-later.toml").string() + ":2:15");
  EXPECT_EQ(c->origins.at("policy.recovery_passes"), f.main.string() + ":3:19");
  EXPECT_EQ(c->origins.at("checks.efa.expected_devices"), (f.drop_ins / "10-first.toml").string() + ":4:20");
  const auto hooks = c->origins.at("policy.hook");
  EXPECT_NE(hooks.find(f.main.string() + ":4:1"), std::string::npos) << hooks;
  EXPECT_NE(hooks.find((f.drop_ins / "20-later.toml").string() + ":3:1"), std::string::npos) << hooks;
}

TEST(DropIns, AnErrorInADropInNamesTheDropInsOwnFileLineAndColumn) {
  Files f("[policy]\nmax_resumes = 3\n");
  f.drop_in("10-typo.toml", "[policy]\n\nmax_resume = 5\n");
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find((f.drop_ins / "10-typo.toml").string() + ":3:1: unknown key 'max_resume' in [policy]"),
            std::string::npos)
      << c.error();
  EXPECT_NE(c.error().find("did you mean 'max_resumes'"), std::string::npos) << c.error();
}

TEST(DropIns, AWrongValueInADropInIsPositionedThere) {
  Files f("");
  f.drop_in("10-bad.toml", "[checks.gpu]\nmemory_action = \"explode\"\n");
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find((f.drop_ins / "10-bad.toml").string() + ":2:17: key 'memory_action'"), std::string::npos)
      << c.error();
}

TEST(DropIns, ATableInOneFileAndAValueInAnotherIsAnError) {
  Files f("[policy]\nmax_resumes = 3\n");
  f.drop_in("10-clash.toml", "policy = 3\n");
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find((f.drop_ins / "10-clash.toml").string() + ":1:1: 'policy' is a table in one file and a value in another"),
            std::string::npos)
      << c.error();
}

TEST(DropIns, ABrokenDropInIsAnErrorNotIgnored) {
  Files f("[policy]\nmax_resumes = 3\n");
  f.drop_in("10-broken.toml", "[policy\n");
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find((f.drop_ins / "10-broken.toml").string() + ":1:"), std::string::npos) << c.error();
}

TEST(DropIns, NoDirectoryIsNoDropIns) {
  ar::test::TempDir dir;
  std::ofstream(dir / "healthd.toml") << "[policy]\nmax_resumes = 2\n";
  auto c = load_config(dir / "healthd.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->files.size(), 1u);
  EXPECT_EQ(c->policy.max_resumes, 2u);
}

TEST(EffectiveConfig, ListsEveryKeyOfEverySectionWithItsValue) {
  auto c = parse_config("[policy]\nmax_resumes = 5\n[[checks.kernel_log.rule]]\ncode = \"IB\"\npattern = \"Link down\"\naction = \"drain\"\n"
                        "[[checks.gpu.xid]]\nxid = 13\naction = \"ignore\"\n[checks.efa.counter_thresholds]\nrdma_read_resp_bytes = 5\n",
                        "t.toml");
  ASSERT_TRUE(c) << c.error();
  auto values = by_key(describe_config(*c));
  EXPECT_EQ(values.at("policy.max_resumes"), "5");
  EXPECT_EQ(values.at("policy.requeue_priority"), "\"top\"");
  EXPECT_EQ(values.at("policy.check_interval_s"), "30");
  EXPECT_EQ(values.at("server.idle_timeout_ms"), "60000");
  EXPECT_EQ(values.at("daemon.socket"), "\"/run/healthd/healthd.sock\"");
  EXPECT_EQ(values.at("checks.gpu.memory_action"), "\"drain\"");
  EXPECT_EQ(values.at("checks.gpu.xid_unknown_action"), "\"drain\"");
  EXPECT_TRUE(values.at("checks.gpu.xid").starts_with("[{xid = 13, action = \"ignore\", count = 1, window_s = 0, description = \""))
      << values.at("checks.gpu.xid");
  EXPECT_EQ(values.at("checks.kernel_log.rule"), "[{code = \"IB\", pattern = \"Link down\", message = \"\", action = \"drain\", anchored = true, max_level = \"notice\"}]");
  EXPECT_EQ(values.at("checks.efa.expected_devices"), "(unset)");
  EXPECT_EQ(values.at("checks.script"), "[]");
  // Every section the registry knows is described.
  std::set<std::string> sections;
  for (const auto& [key, value] : values) sections.insert(key.substr(0, key.find('.', key.starts_with("checks.") ? 7 : 0)));
  for (const auto& s : check_sections()) EXPECT_TRUE(sections.count("checks." + s.name)) << s.name;
}

TEST(EffectiveConfig, CheckConfigPrintsEachKeyWithWhereItCameFrom) {
  Files f("[policy]\nmax_resumes = 5\n[daemon]\nstate_dir = \"/tmp/x\"\ninstance_type = \"p5.48xlarge\"\n");
  f.drop_in("10-gpu.toml", "[checks.gpu]\nlibrary = \"/nonexistent/libnvidia-ml.so.1\"\nevents = false\n");
  std::ostringstream out, err;
  Overrides overrides;
  overrides.node_name = "node-7";
  ASSERT_EQ(check_config(f.main, overrides, out, err), 0) << err.str();
  const auto text = out.str();
  auto line = [&](const std::string& key) {
    auto at = text.find("\n" + key + " = ");
    if (at == std::string::npos) return std::string("(no line for " + key + ")");
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(text.find("(with " + (f.drop_ins / "10-gpu.toml").string() + ")"), std::string::npos) << text;
  EXPECT_EQ(line("policy.max_resumes"), "policy.max_resumes = 5  # " + f.main.string() + ":2:15");
  EXPECT_EQ(line("checks.gpu.events"), "checks.gpu.events = false  # " + (f.drop_ins / "10-gpu.toml").string() + ":3:10");
  EXPECT_EQ(line("daemon.node_name"), "daemon.node_name = \"node-7\"  # command line");
  EXPECT_EQ(line("policy.recovery_passes"), "policy.recovery_passes = 3  # default");
  // The profile fills what the files leave unset: p5.48xlarge has 8 GPUs and 32 EFA devices.
  EXPECT_EQ(line("checks.gpu.expected_count"), "checks.gpu.expected_count = 8  # profile p5.48xlarge");
  EXPECT_EQ(line("checks.efa.expected_devices"), "checks.efa.expected_devices = 32  # profile p5.48xlarge");
}

namespace {

// The sample config with its documented keys uncommented: every "# key = value" line and "# [table]"
// header, except what follows a "# Example:" line up to the next blank line (examples are not
// defaults).
std::string uncommented_sample(int& keys) {
  std::ifstream in(std::string(AR_SOURCE_DIR) + "/packaging/healthd.toml");
  const std::regex key_line(R"(^# ([a-z0-9_]+ = .*)$)");
  const std::regex table_line(R"(^# (\[\[?[a-z0-9_.]+\]\]?)( +#.*)?$)");
  std::ostringstream text;
  bool in_example = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# Example")) in_example = true;
    if (line.empty()) in_example = false;
    std::smatch m;
    if (!in_example && std::regex_match(line, m, key_line)) {
      // A trailing comment after the value stays a comment.
      text << m[1].str() << "\n";
      ++keys;
    } else if (!in_example && std::regex_match(line, m, table_line)) {
      // A sub-table holding defaults ([checks.efa.counter_thresholds]) is uncommented with its keys;
      // an array of tables has no default entries, so it can only be an example.
      if (m[1].str().starts_with("[[")) ADD_FAILURE() << "an array of tables outside an example: " << line;
      text << m[1].str() << "\n";
    } else {
      text << line << "\n";
    }
  }
  return text.str();
}

}  // namespace

TEST(SampleConfig, ItsValuesAreTheRealDefaults) {
  int keys = 0;
  const auto text = uncommented_sample(keys);
  EXPECT_GT(keys, 80);
  auto sample = parse_config(text, "packaging/healthd.toml (defaults uncommented)");
  ASSERT_TRUE(sample) << sample.error();
  auto defaults = parse_config("", "empty");
  ASSERT_TRUE(defaults) << defaults.error();
  auto want = by_key(describe_config(*defaults));
  auto got = by_key(describe_config(*sample));
  for (const auto& [key, value] : want) {
    if (key == "daemon.node_name") continue;  // the host name, shown as an example
    EXPECT_EQ(got.at(key), value) << key << ": the sample config says " << got.at(key) << ", the default is " << value;
  }
}

TEST(SampleConfig, DocumentsEveryKey) {
  std::ifstream in(std::string(AR_SOURCE_DIR) + "/packaging/healthd.toml");
  std::set<std::string> documented;
  std::string section;
  const std::regex header(R"(^#? ?\[\[?([a-z0-9_.]+)\]\]?( +#.*)?$)");
  const std::regex key_line(R"(^# ([a-z0-9_]+) = .*$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      section = m[1].str();
      documented.insert(section);
    } else if (std::regex_match(line, m, key_line)) {
      documented.insert(section + "." + m[1].str());
    }
  }
  auto defaults = parse_config("", "empty");
  ASSERT_TRUE(defaults) << defaults.error();
  for (const auto& v : describe_config(*defaults)) EXPECT_TRUE(documented.count(v.key)) << v.key << " is not in packaging/healthd.toml";
}

// A config names programs a root daemon runs: what it reads must be a regular file nobody else can
// write, of a sane size, and nothing put in its place may hang the read (review of issue 14).
TEST(ConfigFiles, ADirectoryIsNotAConfigFile) {
  ar::test::TempDir dir;
  std::filesystem::create_directories(dir / "healthd.toml");
  auto c = load_config(dir / "healthd.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("not a regular file"), std::string::npos) << c.error();
}

TEST(ConfigFiles, AConfigOthersCanWriteIsRefused) {
  Files f("[policy]\nmax_resumes = 3\n");
  f.drop_in("10-open.toml", "[policy]\nmax_resumes = 5\n");
  std::filesystem::permissions(f.drop_ins / "10-open.toml", std::filesystem::perms::others_write,
                               std::filesystem::perm_options::add);
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("10-open.toml: writable by group or others"), std::string::npos) << c.error();
}

TEST(ConfigFiles, ADropInDirectoryOthersCanWriteIsRefused) {
  Files f("[policy]\nmax_resumes = 3\n");
  std::filesystem::permissions(f.drop_ins, std::filesystem::perms::all);
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("healthd.toml.d: owned by another user than root, or writable by group or others"),
            std::string::npos)
      << c.error();
}

TEST(ConfigFiles, ABrokenOrSpecialDropInIsAnErrorNotSkipped) {
  Files f("[policy]\nmax_resumes = 3\n");
  std::filesystem::create_symlink(f.dir / "nowhere.toml", f.drop_ins / "10-dangling.toml");
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("10-dangling.toml: cannot open"), std::string::npos) << c.error();
  std::filesystem::remove(f.drop_ins / "10-dangling.toml");
  // A FIFO: refused at once, not waited on (the read would block a reload forever).
  ASSERT_EQ(::mkfifo((f.drop_ins / "20-fifo.toml").c_str(), 0644), 0);
  c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("20-fifo.toml: not a regular file"), std::string::npos) << c.error();
}

TEST(ConfigFiles, AHugeFileIsRefused) {
  Files f("[policy]\nmax_resumes = 3\n");
  f.drop_in("10-huge.toml", "# " + std::string(2 * 1024 * 1024, 'x') + "\n");
  auto c = load_config(f.main);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("10-huge.toml: larger than 1048576 bytes"), std::string::npos) << c.error();
}

TEST(DropIns, AnEmptyArrayInALaterFileAddsNothingAndClearsNothing) {
  Files f("[[checks.kernel_log.rule]]\ncode = \"IB\"\npattern = \"Link down\"\naction = \"warn\"\n");
  f.drop_in("10-empty.toml", "[checks.kernel_log]\nrule = []\n");
  auto c = load_config(f.main);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(by_key(describe_config(*c)).at("checks.kernel_log.rule"),
            "[{code = \"IB\", pattern = \"Link down\", message = \"\", action = \"warn\", anchored = true, max_level = \"notice\"}]");
}
