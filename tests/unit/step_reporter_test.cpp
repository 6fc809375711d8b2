#include <sys/socket.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include "daemon_fixture.hpp"
#include "step_reporter.hpp"

using namespace std::chrono_literals;
using ar::plugin::StepReporter;
namespace proto = ar::proto;

namespace {

struct Logged {
  std::vector<std::string> lines;
  StepReporter::Log log() {
    return [this](const std::string& s) { lines.push_back(s); };
  }
};

// A socket that accepts connections (through the kernel backlog) but never answers: a hung daemon.
class SilentListener {
 public:
  explicit SilentListener(const std::string& path) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd_, 16) != 0)
      throw std::runtime_error("cannot listen");
  }
  ~SilentListener() { ::close(fd_); }

 private:
  int fd_;
};

}  // namespace

TEST(StepReporter, DeliversAWholeStepOverOneConnection) {
  ar::test::RunningDaemon d;
  Logged logged;
  StepReporter r(d.socket_path, 500ms, 2000ms, logged.log());
  EXPECT_TRUE(r.report(proto::StepStart{21, 0, "n1", 0, true, 0}));
  EXPECT_TRUE(r.report(proto::TaskExit{21, 0, "n1", 0, 768}));
  EXPECT_TRUE(r.report(proto::TaskExit{21, 0, "n1", 1, 0}));
  EXPECT_TRUE(r.report(proto::StepEnd{21, 0, "n1"}));
  EXPECT_TRUE(logged.lines.empty());
  EXPECT_EQ(d.changes, 4);
}

TEST(StepReporter, DaemonDownFailsAtOnceAndLogsOnce) {
  ar::test::TempDir dir;
  Logged logged;
  StepReporter r((dir / "nobody.sock").string(), 200ms, 500ms, logged.log());
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.report(proto::StepStart{1, 0, "n1", 0, true, 0}));
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(r.report(proto::TaskExit{1, 0, "n1", static_cast<uint32_t>(i), 0}));
  EXPECT_FALSE(r.report(proto::StepEnd{1, 0, "n1"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_TRUE(r.disabled());
  ASSERT_EQ(logged.lines.size(), 1u);
  EXPECT_NE(logged.lines[0].find("nobody.sock"), std::string::npos) << logged.lines[0];
}

TEST(StepReporter, HungDaemonCostsAtMostTheTimeoutForTheWholeStep) {
  ar::test::TempDir dir;
  SilentListener hung((dir / "hung.sock").string());
  Logged logged;
  StepReporter r((dir / "hung.sock").string(), 150ms, 400ms, logged.log());
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.report(proto::StepStart{1, 0, "n1", 0, true, 0}));
  for (int i = 0; i < 20; ++i) r.report(proto::TaskExit{1, 0, "n1", static_cast<uint32_t>(i), 0});
  r.report(proto::StepEnd{1, 0, "n1"});
  auto took = std::chrono::steady_clock::now() - start;
  // One timeout, then nothing more is tried; generous upper bound for a loaded machine.
  EXPECT_GE(took, 140ms);
  EXPECT_LT(took, 1000ms);
  ASSERT_EQ(logged.lines.size(), 1u);
  EXPECT_NE(logged.lines[0].find("timed out"), std::string::npos) << logged.lines[0];
}

TEST(StepReporter, ReconnectsOnceAfterTheDaemonRestarted) {
  ar::test::TempDir dir;
  const std::string path = (dir / "restarting.sock").string();
  Logged logged;
  StepReporter r(path, 500ms, 3000ms, logged.log());
  {
    ar::test::RunningDaemon first("n1", path);
    ASSERT_TRUE(r.report(proto::StepStart{2, 0, "n1", 0, true, 0}));
  }
  // healthd restarted between two messages of the step: the kept connection is dead, the reporter
  // reconnects once and delivers, without logging a failure.
  ar::test::RunningDaemon second("n1", path);
  EXPECT_TRUE(r.report(proto::TaskExit{2, 0, "n1", 0, 0}));
  EXPECT_TRUE(logged.lines.empty());
  EXPECT_EQ(second.changes, 1);
}

TEST(StepReporter, DaemonGoneMidStepFailsWithOneLogLine) {
  ar::test::TempDir dir;
  const std::string path = (dir / "gone.sock").string();
  Logged logged;
  StepReporter r(path, 500ms, 3000ms, logged.log());
  {
    ar::test::RunningDaemon first("n1", path);
    ASSERT_TRUE(r.report(proto::StepStart{2, 0, "n1", 0, true, 0}));
  }
  EXPECT_FALSE(r.report(proto::TaskExit{2, 0, "n1", 0, 0}));
  EXPECT_FALSE(r.report(proto::StepEnd{2, 0, "n1"}));
  EXPECT_EQ(logged.lines.size(), 1u);
}
