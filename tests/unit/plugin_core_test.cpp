#include <gtest/gtest.h>

#include "options.hpp"
#include "plugstack_args.hpp"

using namespace ar::plugin;

TEST(AutoResumeOption, BareFlagMeansOn) { EXPECT_EQ(parse_auto_resume_value(nullptr), true); }

TEST(AutoResumeOption, ZeroAndOne) {
  EXPECT_EQ(parse_auto_resume_value("1"), true);
  EXPECT_EQ(parse_auto_resume_value("0"), false);
}

TEST(AutoResumeOption, RefusesAnythingElseNamingTheValue) {
  for (const char* bad : {"yes", "2", "-1", "", "01", "1 ", "true"}) {
    auto r = parse_auto_resume_value(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().find(std::string("'") + bad + "'"), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("expected 0 or 1"), std::string::npos);
  }
}

TEST(AutoResumeOption, EmptyValueForwardedBySlurmIsTheBareFlag) {
  EXPECT_EQ(parse_auto_resume_value("", ValueSource::forwarded_by_slurm), true);
  EXPECT_EQ(parse_auto_resume_value("(null)", ValueSource::forwarded_by_slurm), true);
  EXPECT_FALSE(parse_auto_resume_value("(null)", ValueSource::command_line));
  EXPECT_EQ(parse_auto_resume_value("0", ValueSource::forwarded_by_slurm), false);
  EXPECT_FALSE(parse_auto_resume_value("yes", ValueSource::forwarded_by_slurm));
  EXPECT_FALSE(parse_auto_resume_value("", ValueSource::command_line));
}

TEST(PlugstackArgs, DefaultsWithoutArguments) {
  auto a = parse_plugstack_args({});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->socket_template, "/run/healthd/healthd.sock");
  EXPECT_EQ(a->timeout.count(), 200);
  EXPECT_EQ(a->step_budget.count(), 500);
}

TEST(PlugstackArgs, ReadsEveryKey) {
  auto a = parse_plugstack_args({"socket=/tmp/x/%n.sock", "timeout_ms=50", "step_budget_ms=120"});
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->socket_template, "/tmp/x/%n.sock");
  EXPECT_EQ(a->timeout.count(), 50);
  EXPECT_EQ(a->step_budget.count(), 120);
}

TEST(PlugstackArgs, UnknownKeyIsNamed) {
  auto a = parse_plugstack_args({"sockett=/tmp/x"});
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().find("'sockett'"), std::string::npos) << a.error();
}

TEST(PlugstackArgs, BadValuesAreNamed) {
  for (const char* bad : {"timeout_ms=0", "timeout_ms=abc", "timeout_ms=", "timeout_ms=99999999", "socket=relative.sock",
                          "socket=/tmp/%x", "noequals"}) {
    auto a = parse_plugstack_args({bad});
    ASSERT_FALSE(a) << bad;
    std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(a.error().find(key), std::string::npos) << a.error();
  }
}

TEST(SocketTemplate, ExpandsNodeAndPercent) {
  EXPECT_EQ(expand_socket_template("/run/%n/h.sock", "n2"), "/run/n2/h.sock");
  EXPECT_EQ(expand_socket_template("/run/100%%/%n", "n1"), "/run/100%/n1");
  EXPECT_FALSE(expand_socket_template("/run/%", "n1"));
  EXPECT_FALSE(expand_socket_template("/run/%j", "n1"));
}

// The node name comes from the step's node list, which a launcher can set: root's slurmstepd must
// never connect to a path of the user's choosing through it.
TEST(SocketTemplate, ANodeNameThatLeavesTheDirectoryIsRefused) {
  for (const char* bad : {"../../tmp/evil", "..", ".", "n1/../x", "", "n 1", "n1\n"}) {
    auto r = expand_socket_template("/run/healthd/%n.sock", bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("not one a socket path may hold"), std::string::npos) << r.error();
  }
  EXPECT_EQ(expand_socket_template("/run/healthd/%n.sock", "gpu-a_1.rack2"), "/run/healthd/gpu-a_1.rack2.sock");
  // A template without %n does not care about the name.
  EXPECT_EQ(expand_socket_template("/run/healthd.sock", "../x"), "/run/healthd.sock");
}

TEST(CheckpointDirOption, AbsolutePathsOnly) {
  EXPECT_EQ(parse_checkpoint_dir("/fsx/ckpt"), "/fsx/ckpt");
  for (const char* bad : {"", "ckpt", "./ckpt"}) {
    auto r = parse_checkpoint_dir(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("--auto-resume-checkpoint-dir"), std::string::npos);
  }
  EXPECT_FALSE(parse_checkpoint_dir(nullptr));
}

TEST(MaxResumesOption, NumbersOnly) {
  EXPECT_EQ(parse_max_resumes("0"), 0u);
  EXPECT_EQ(parse_max_resumes("5"), 5u);
  for (const char* bad : {"", "-1", "x", "5x", "1001"}) {
    auto r = parse_max_resumes(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("--auto-resume-max"), std::string::npos);
  }
}
