// The GPU reset against the fake NVML library (the same inspector the daemon builds) and real
// programs: what blocks a reset, a reset that fails, one that succeeds, the argv it gets.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "actions/gpu_reset.hpp"
#include "collectors/nvml/nvml_collector.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {

struct ResetBench {
  ar::test::TempDir dir;
  std::filesystem::path scenario = dir / "nvml.json";
  std::filesystem::path seen = dir / "argv";
  CureConfig config;
  GpuInspector inspect = [](const std::string& bus) { return collect_one_gpu(FAKE_NVML_PATH, bus); };
  explicit ResetBench(const std::string& scenario_json) {
    std::ofstream(scenario) << scenario_json;
    ::setenv("FAKE_NVML_SCENARIO", scenario.c_str(), 1);
    // The reset program: writes its argv to a file, exits with $1.
    auto script = dir / "reset.sh";
    std::ofstream(script) << "#!/bin/sh\ncode=$1; shift; echo \"$@\" >" << seen.string()
                          << "\necho 'Unable to reset this GPU' >&2\nexit $code\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    config.reset_command = {script.string(), "0", "-i", "%g", "--node", "%n"};
    config.reset_timeout = 5s;
  }
  ~ResetBench() { std::filesystem::remove(scenario); }
  std::string argv() {
    std::ifstream in(seen);
    std::string line;
    std::getline(in, line);
    return line;
  }
};

}  // namespace

TEST(GpuReset, AnIdleGpuIsResetByItsNvmlBusId) {
  ResetBench b(R"({"devices": [{}, {"persistence": false}]})");
  // The kernel log's short form of GPU 1's address: the program gets NVML's.
  auto r = reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect);
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::reset) << r.message;
  EXPECT_EQ(b.argv(), "-i 00000000:28:00.0 --node n2");
}

TEST(GpuReset, ProcessesOnTheGpuBlockIt) {
  ResetBench b(R"({"devices": [{}, {"persistence": false, "processes": [4242, 77]}]})");
  auto r = reset_gpus(b.config, {"00000000:28:00.0"}, "n2", b.inspect);
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::blocked);
  EXPECT_NE(r.message.find("77, 4242"), std::string::npos) << r.message;
  EXPECT_TRUE(b.argv().empty());  // never run
}

TEST(GpuReset, PersistenceModeBlocksItUnlessTheAdminSaysOtherwise) {
  ResetBench b(R"({"devices": [{}, {"persistence": true}]})");
  auto r = reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect);
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::failed);
  EXPECT_NE(r.message.find("persistence mode"), std::string::npos) << r.message;
  b.config.reset_blocked_by_persistence = false;
  EXPECT_EQ(reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect).kind, GpuResetOutcome::Kind::reset);
}

TEST(GpuReset, AFailingProgramSaysItsExitAndWhatItPrinted) {
  ResetBench b(R"({"devices": [{}, {"persistence": false}]})");
  b.config.reset_command[1] = "3";
  auto r = reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect);
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::failed);
  EXPECT_NE(r.message.find("exit 3"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("Unable to reset this GPU"), std::string::npos) << r.message;
}

TEST(GpuReset, AGpuNvmlCannotSeeIsNotReset) {
  ResetBench b(R"({"devices": [{}, {"lost": true}]})");
  auto r = reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect);
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::failed);
  EXPECT_TRUE(b.argv().empty());
  auto none = reset_gpus(b.config, {}, "n2", b.inspect);
  EXPECT_EQ(none.kind, GpuResetOutcome::Kind::failed);
  EXPECT_NE(none.message.find("names no GPU"), std::string::npos);
}

// No reset tool on the node is not a reset that failed: the step cannot run here (issue 31), and the
// reason says what the node needs.
TEST(GpuReset, AResetProgramNotFoundAtLoadCannotRunHere) {
  ResetBench b("{}");
  b.config.reset_command = {"nvidia-smi", "--gpu-reset", "-i", "%g"};
  auto r = reset_gpus(b.config, {"0000:28:00"}, "n2", {});
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::cannot_run);
  EXPECT_NE(r.message.find("was not found"), std::string::npos) << r.message;
  auto missing = reset_cannot_run(b.config);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->needs, "needs a GPU reset: no reset command; set [cure] reset_command");
  // The one found at load runs.
  EXPECT_FALSE(ResetBench("{}").config.reset_command.empty());
  EXPECT_FALSE(reset_cannot_run(ResetBench("{}").config).has_value());
}

TEST(GpuReset, AResetProgramThatIsNotExecutableCannotRunHere) {
  ResetBench b(R"({"devices": [{}, {"persistence": false}]})");
  std::filesystem::permissions(b.config.reset_command.front(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto r = reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect);
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::cannot_run);
  EXPECT_NE(r.message.find("cannot be run"), std::string::npos) << r.message;
  EXPECT_TRUE(b.argv().empty());  // never run
  b.config.reset_command.front() = (b.dir / "gone.sh").string();
  EXPECT_EQ(reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect).kind, GpuResetOutcome::Kind::cannot_run);
}

TEST(GpuReset, AHungResetIsKilledAtItsDeadline) {
  ResetBench b(R"({"devices": [{}, {"persistence": false}]})");
  b.config.reset_command = {"/bin/sleep", "30"};
  b.config.reset_timeout = 1s;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = reset_gpus(b.config, {"0000:28:00"}, "n2", b.inspect);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(r.kind, GpuResetOutcome::Kind::failed);
  EXPECT_NE(r.message.find("did not finish within 1 s"), std::string::npos) << r.message;
}
