// run_process with real processes: output, deadlines, what a child inherits (fds, environment),
// program names, and killing a whole tree, setsid'd grandchildren included.
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "runtime/process.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {

// Live (not zombie) processes whose command line is exactly `argv`.
std::vector<pid_t> live_processes(const std::vector<std::string>& argv) {
  std::string want;
  for (const auto& a : argv) want += a + '\0';
  std::vector<pid_t> found;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmd(e.path() / "cmdline");
    std::string text((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (text != want) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') continue;
    found.push_back(std::stoi(name));
  }
  return found;
}

bool exists(pid_t pid) { return std::filesystem::exists("/proc/" + std::to_string(pid)); }

class SubreaperProcess : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(become_child_subreaper()); }
};

}  // namespace

TEST(Process, CapturesOutputAndExitCode) {
  auto r = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 5s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_FALSE(r->timed_out);
}

TEST(Process, HangingProgramIsKilledAtTheDeadline) {
  auto start = std::chrono::steady_clock::now();
  // The child shell starts a grandchild that holds the pipes: both must go.
  auto r = run_process({"/bin/sh", "-c", "sleep 30 & sleep 30"}, 200ms);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(Process, ProgramThatClosesOutputButRunsOnStillTimesOut) {
  auto r = run_process({"/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, 200ms);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
}

TEST(Process, OutputIsBounded) {
  auto r = run_process({"/bin/sh", "-c", "head -c 100000 /dev/zero"}, 5s, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out.size(), 1000u);
  EXPECT_EQ(r->exit_code, 0);
}

TEST(Process, MissingProgramIsAnError) {
  auto r = run_process({"/nonexistent/scontrol"}, 1s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("/nonexistent/scontrol"), std::string::npos);
}

TEST(Process, ChildInheritsNoFileDescriptorButStdio) {
  // What leaked before: descriptors healthd holds without O_CLOEXEC, a socket above all.
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  int file = ::open("/dev/null", O_RDONLY);
  int high = ::dup2(file, 200);
  ASSERT_GE(sock, 0);
  ASSERT_EQ(high, 200);
  // ls is a child of the shell: it lists the shell's descriptors, not its own directory handle.
  auto r = run_process({"/bin/sh", "-c", "ls /proc/$$/fd; :"}, 5s);
  ::close(sock);
  ::close(file);
  ::close(high);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->out, "0\n1\n2\n") << r->err;
}

TEST(Process, ChildEnvironmentIsTheFixedSetAndTheAllowlist) {
  ::setenv("SLURM_CONF", "/etc/slurm-test/slurm.conf", 1);
  ::setenv("AR_TEST_ALLOWED", "yes", 1);
  ::setenv("AR_TEST_SECRET", "must not leak", 1);
  ::setenv("LD_PRELOAD", "/tmp/evil.so", 1);
  ::unsetenv("TZ");
  set_child_environment({"AR_TEST_ALLOWED", "AR_TEST_UNSET"});
  auto r = run_process({"/usr/bin/env"}, 5s);
  ::unsetenv("AR_TEST_SECRET");
  ::unsetenv("LD_PRELOAD");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->out,
            "PATH=/usr/sbin:/usr/bin:/sbin:/bin\nLANG=C\nLC_ALL=C\nHOME=/\n"
            "SLURM_CONF=/etc/slurm-test/slurm.conf\nAR_TEST_ALLOWED=yes\n");
  set_child_environment({});
  r = run_process({"/usr/bin/env"}, 5s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->out.find("AR_TEST_ALLOWED"), std::string::npos) << r->out;
  ::unsetenv("SLURM_CONF");
  ::unsetenv("AR_TEST_ALLOWED");
}

TEST(Process, EnvironmentNamesAreChecked) {
  EXPECT_TRUE(is_env_name("SLURM_CONF"));
  EXPECT_TRUE(is_env_name("_x1"));
  for (const char* bad : {"", "1A", "A=B", "A B", "A-B", "A\nB"}) EXPECT_FALSE(is_env_name(bad)) << bad;
}

TEST(Process, RelativeProgramIsRefusedAtRunTime) {
  auto r = run_process({"sh", "-c", "exit 0"}, 1s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not an absolute path"), std::string::npos) << r.error();
  r = run_process({"./sh"}, 1s);
  ASSERT_FALSE(r);
}

TEST(Process, ProgramNamesAreResolvedAgainstTheFixedPathOnly) {
  auto sh = resolve_program("sh");
  ASSERT_TRUE(sh) << sh.error();
  EXPECT_TRUE(*sh == "/usr/bin/sh" || *sh == "/bin/sh" || *sh == "/usr/sbin/sh") << *sh;

  // A program only in the caller's PATH is not found: the daemon's PATH is not looked at.
  ar::test::TempDir dir;
  auto tool = dir / "ar-only-here";
  std::ofstream(tool) << "#!/bin/sh\n";
  std::filesystem::permissions(tool, std::filesystem::perms::owner_all);
  std::string old_path = ::getenv("PATH") ? ::getenv("PATH") : "";
  ::setenv("PATH", dir.path().c_str(), 1);
  auto r = resolve_program("ar-only-here");
  ::setenv("PATH", old_path.c_str(), 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not found in /usr/sbin:/usr/bin:/sbin:/bin"), std::string::npos) << r.error();

  EXPECT_EQ(resolve_program(tool.string()).value_or(""), tool.string());
  EXPECT_FALSE(resolve_program("bin/sh"));                       // relative path
  EXPECT_FALSE(resolve_program(""));
  EXPECT_FALSE(resolve_program((dir / "missing").string()));    // absolute but absent
  EXPECT_FALSE(resolve_program(dir.path().string()));           // a directory
  std::ofstream(dir / "plain") << "not executable\n";
  std::filesystem::permissions(dir / "plain", std::filesystem::perms::owner_read);
  EXPECT_FALSE(resolve_program((dir / "plain").string()));
}

TEST_F(SubreaperProcess, SetsidGrandchildIsKilledAtTheDeadline) {
  // The grandchild leaves the process group (setsid), so killing the group alone misses it.
  auto r = run_process({"/bin/sh", "-c", "setsid sleep 1000.5 </dev/null >/dev/null 2>&1 & sleep 30"}, 500ms);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(live_processes({"sleep", "1000.5"}), std::vector<pid_t>{});
}

TEST_F(SubreaperProcess, OrphanStillHoldingTheOutputIsKilledAtTheDeadline) {
  // The script ends at once; its setsid grandchild is an orphan (reparented to us, the subreaper)
  // that keeps the output pipe open, so the call runs to its deadline: the orphan must go with it.
  auto r = run_process({"/bin/sh", "-c", "setsid sleep 1000.25 & exit 0"}, 500ms);
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(live_processes({"sleep", "1000.25"}), std::vector<pid_t>{});
}

TEST_F(SubreaperProcess, OrphansAreReaped) {
  // A grandchild that outlives its parent comes back to us; when it ends, the reaper waits for it
  // (it is no live run_process call's child), so no zombie stays behind.
  ar::test::TempDir dir;
  auto pidfile = dir / "pid";
  auto r = run_process({"/bin/sh", "-c",
                        "setsid sh -c 'echo $$ >" + pidfile.string() + "; sleep 0.3' </dev/null >/dev/null 2>&1 & exit 0"},
                       5s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->timed_out);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  pid_t orphan = 0;
  while (orphan == 0 && std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(pidfile);
    if (!(in >> orphan)) {
      orphan = 0;
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_GT(orphan, 0);
  while (exists(orphan) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(exists(orphan)) << "orphan " << orphan << " was not reaped";
}

TEST_F(SubreaperProcess, ChildThatDoesNotDieIsLeftToTheReaperAndTheCallReturns) {
  // A process stuck in the kernel ignores SIGKILL until its I/O ends. Simulated with a real kernel
  // rule: a child traced by another process becomes a zombie its parent cannot wait for until the
  // tracer waits or goes. So to run_process it "does not die".
  ar::test::TempDir dir;
  auto pidfile = dir / "pid";
  auto call = std::async(std::launch::async, [&] {
    return run_process({"/bin/sh", "-c", "echo $$ >" + pidfile.string() + "; exec sleep 30"}, 1s);
  });
  pid_t child = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (child == 0 && std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(pidfile);
    if (!(in >> child)) {
      child = 0;
      std::this_thread::sleep_for(5ms);
    }
  }
  ASSERT_GT(child, 0);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t tracer = ::fork();
  if (tracer == 0) {
    // Only the pipe to the test: a copy of run_process's output pipes would make the tracer one of
    // the processes its deadline kills (those that hold the child's output).
    int keep = ::dup2(ready[1], 3);
    ::close_range(4, ~0U, 0);
    char ok = ::ptrace(PTRACE_SEIZE, child, nullptr, nullptr) == 0 ? 'y' : 'n';
    (void)!::write(keep, &ok, 1);
    for (;;) ::pause();
  }
  ASSERT_GT(tracer, 0);
  char ok = 'n';
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  if (ok != 'y') {
    ::kill(tracer, SIGKILL);
    ::waitpid(tracer, nullptr, 0);
    call.wait();
    GTEST_SKIP() << "ptrace is not allowed here: cannot simulate a child that does not die";
  }
  const auto start = std::chrono::steady_clock::now();
  auto r = call.get();
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r) << "timed_out " << r->timed_out << " signaled " << r->signaled << " exit " << r->exit_code;
  EXPECT_NE(r.error().find("still not gone"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("pid " + std::to_string(child)), std::string::npos) << r.error();
  EXPECT_LT(took, 1s + kKillGrace + 2s);
  // The tracer goes: now the zombie reaches us, and the reaper (not a waiting call) reaps it.
  ::kill(tracer, SIGKILL);
  ::waitpid(tracer, nullptr, 0);
  const auto reap_deadline = std::chrono::steady_clock::now() + 30s;
  while (exists(child) && std::chrono::steady_clock::now() < reap_deadline) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(exists(child)) << "stuck child " << child << " was never reaped";
}

TEST_F(SubreaperProcess, ConcurrentCallsEachGetTheirOwnExitStatus) {
  // The reaper never takes a pid a live call waits for: every call sees its child's own exit code.
  std::vector<std::future<std::expected<ProcessResult, std::string>>> calls;
  for (int i = 0; i < 16; ++i)
    calls.push_back(std::async(std::launch::async, [i] {
      return run_process({"/bin/sh", "-c", "setsid sleep 0.05 & exit " + std::to_string(i)}, 10s);
    }));
  for (int i = 0; i < 16; ++i) {
    auto r = calls[i].get();
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->exit_code, i);
  }
}
