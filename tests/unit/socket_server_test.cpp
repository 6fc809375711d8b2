#include <cstdio>
#include <fstream>
#include <future>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "sanitizers.hpp"
#include "auto_resume/unix_client.hpp"
#include "daemon_fixture.hpp"
#include "log_capture.hpp"

using namespace std::chrono_literals;
namespace proto = ar::proto;

namespace {

std::string raw_exchange(const std::string& path, const std::string& bytes) {
  auto deadline = ar::UnixClient::Clock::now() + 3s;
  auto c = ar::UnixClient::connect(path, deadline);
  if (!c) return "connect failed: " + c.error();
  auto line = c->request(bytes, deadline);
  return line ? *line : "error: " + line.error();
}

std::string error_code(const std::string& reply_line) {
  auto r = proto::parse_reply(reply_line);
  return r ? "ok" : r.error().code;
}

}  // namespace

TEST(SocketServer, AnswersPingAndRecordsSteps) {
  ar::test::RunningDaemon d;
  auto pong = ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 2s);
  ASSERT_TRUE(pong) << pong.error();
  EXPECT_EQ((*pong)["node"], "n1");

  auto r = ar::call(d.socket_path, proto::to_json(proto::Request{proto::StepStart{11, 0, "n1", 0, true, 0}}), 2s);
  ASSERT_TRUE(r) << r.error();
  auto jobs = ar::call(d.socket_path, proto::to_json(proto::Request{proto::JobsQuery{}}), 2s);
  ASSERT_TRUE(jobs) << jobs.error();
  ASSERT_EQ((*jobs)["jobs"].size(), 1u);
  EXPECT_EQ((*jobs)["jobs"][0]["job_id"], 11);
  EXPECT_EQ((*jobs)["jobs"][0]["auto_resume"], true);
}

TEST(SocketServer, EveryBadMessageGetsAnErrorReplyAndTheConnectionSurvives) {
  ar::test::RunningDaemon d;
  auto deadline = ar::UnixClient::Clock::now() + 5s;
  auto c = ar::UnixClient::connect(d.socket_path, deadline);
  ASSERT_TRUE(c) << c.error();
  for (auto [bytes, code] : std::vector<std::pair<std::string, std::string>>{
           {"{oops\n", proto::err::kMalformed},
           {"{\"v\":99,\"type\":\"ping\"}\n", proto::err::kBadVersion},
           {"{\"v\":1,\"type\":\"format_disk\"}\n", proto::err::kUnknownType},
           {"{\"v\":1,\"type\":\"step_end\",\"job_id\":1}\n", proto::err::kBadField},
           {"{\"v\":1,\"type\":\"ping\"}\n", "ok"}}) {
    auto line = c->request(bytes, deadline);
    ASSERT_TRUE(line) << line.error();
    EXPECT_EQ(error_code(*line), code) << bytes;
  }
}

TEST(SocketServer, OversizeMessageGetsTooLargeThenClose) {
  ar::test::RunningDaemon d;
  std::string huge(proto::kMaxMessageBytes + 100, 'x');
  auto line = raw_exchange(d.socket_path, huge);
  EXPECT_EQ(error_code(line), proto::err::kTooLarge) << line.substr(0, 200);
  // The daemon still serves others.
  EXPECT_TRUE(ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 2s));
}

TEST(SocketServer, MessageForAnotherNodeIsRefused) {
  ar::test::RunningDaemon d("n1");
  auto r = ar::call(d.socket_path, proto::to_json(proto::Request{proto::StepStart{1, 0, "n2", 0, true, 0}}), 2s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("n2"), std::string::npos) << r.error();
  EXPECT_TRUE(d.registry.jobs().empty());
}

TEST(SocketServer, SecondDaemonOnTheSameSocketIsRefused) {
  ar::test::RunningDaemon d;
  asio::io_context io;
  ar::healthd::SocketServer second(io, d.socket_path, d.handler);
  auto r = second.start();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("another daemon"), std::string::npos) << r.error();
  EXPECT_TRUE(ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 2s));
}

TEST(SocketServer, StaleSocketFileIsReplaced) {
  ar::test::TempDir dir;
  auto path = (dir / "stale.sock").string();
  {
    // A socket file whose listener is gone, as a crashed daemon leaves it.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  ar::healthd::JobRegistry registry(dir / "jobs.json");
  ar::healthd::DaemonInfo info{"n1", "t", path, "", "", ar::healthd::WallClock::now()};
  ar::healthd::RequestHandler handler(info, registry, [] {});
  asio::io_context io;
  ar::healthd::SocketServer server(io, path, handler);
  ASSERT_TRUE(server.start());
}

TEST(SocketServer, RegularFileInTheWayIsNotDeleted) {
  ar::test::TempDir dir;
  auto path = dir / "not-a-socket";
  std::ofstream(path) << "precious";
  ar::healthd::JobRegistry registry(dir / "jobs.json");
  ar::healthd::DaemonInfo info{"n1", "t", path.string(), "", "", ar::healthd::WallClock::now()};
  ar::healthd::RequestHandler handler(info, registry, [] {});
  asio::io_context io;
  ar::healthd::SocketServer server(io, path, handler);
  EXPECT_FALSE(server.start());
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
}

// ---- hostile clients -----------------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

// A blocking client that sends and reads raw bytes, for clients that do not behave.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool send(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Everything until the server closes the connection or `within` passes; `closed` says which.
  std::string read_all(std::chrono::milliseconds within, bool* closed = nullptr) {
    std::string got;
    const auto deadline = Clock::now() + within;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char buf[65536];
      auto n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        if (closed) *closed = true;
        return got;
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    if (closed) *closed = false;
    return got;
  }
  // The first line, or what came before the server closed the connection.
  std::string read_line(std::chrono::milliseconds within) {
    std::string got;
    const auto deadline = Clock::now() + within;
    while (got.find('\n') == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char c;
      if (::recv(fd_, &c, 1, 0) <= 0) break;
      got += c;
    }
    return got;
  }

 private:
  int fd_ = -1;
};

ar::healthd::ServerLimits limits_with(std::chrono::milliseconds idle, std::chrono::milliseconds message,
                                      std::chrono::milliseconds write) {
  ar::healthd::ServerLimits l;
  l.idle_timeout = idle;
  l.message_timeout = message;
  l.write_timeout = write;
  return l;
}

// Runs `fn` on the daemon's loop (which owns the registry) and waits for it.
void on_loop(ar::test::RunningDaemon& d, std::function<void()> fn) {
  std::promise<void> done;
  asio::post(d.io, [&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

const std::string kPing = "{\"v\":1,\"type\":\"ping\"}\n";

}  // namespace

TEST(SocketServer, ListenerAndConnectionsAreCloseOnExec) {
  ar::test::RunningDaemon d;
  RawClient c(d.socket_path);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send(kPing));
  ASSERT_EQ(error_code(c.read_line(2s)), "ok");  // accepted: the server's end of it is open now
  // Every socket of this process (the listener, the server's end, the client's) must be
  // close-on-exec, or every child the daemon starts holds them.
  int sockets = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || target.rfind("socket:", 0) != 0) continue;
    int fd = std::stoi(entry.path().filename().string());
    int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) continue;  // closed meanwhile
    ++sockets;
    EXPECT_TRUE(flags & FD_CLOEXEC) << "fd " << fd << " (" << target << ") is not close-on-exec";
  }
  EXPECT_GE(sockets, 3);
}

TEST(SocketServer, SlowButSteadyWriterIsServed) {
  ar::test::RunningDaemon d("n1", "", limits_with(300ms, 10s, 10s));
  RawClient c(d.socket_path);
  ASSERT_TRUE(c.connected());
  // One byte every 50 ms: the whole line takes longer than the idle timeout, no gap does.
  for (char ch : kPing) {
    ASSERT_TRUE(c.send(std::string(1, ch)));
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(error_code(c.read_line(2s)), "ok");
}

TEST(SocketServer, AMessageTrickledPastItsDeadlineIsAnsweredTimeoutAndClosed) {
  ar::test::RunningDaemon d("n1", "", limits_with(300ms, 800ms, 10s));
  RawClient c(d.socket_path);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send("{\"v\":1,"));
  const auto started = Clock::now();
  std::string reply;
  // Each space resets the idle timer; the message deadline still ends it.
  while (Clock::now() - started < 5s && c.send(" ")) {
    pollfd p{c.fd(), POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) break;
  }
  bool closed = false;
  reply = c.read_all(2s, &closed);
  EXPECT_EQ(error_code(reply), proto::err::kTimeout) << reply;
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - started, 3s);
}

TEST(SocketServer, AnIdleConnectionIsClosed) {
  ar::test::RunningDaemon d("n1", "", limits_with(300ms, 10s, 10s));
  RawClient c(d.socket_path);
  ASSERT_TRUE(c.connected());
  bool closed = false;
  EXPECT_EQ(c.read_all(3s, &closed), "");
  EXPECT_TRUE(closed);
}

TEST(SocketServer, AClientThatDoesNotReadItsReplyIsDropped) {
  ar::test::RunningDaemon d("n1", "", limits_with(10s, 10s, 300ms));
  // A `jobs` reply of megabytes: more than the socket buffers hold.
  on_loop(d, [&] {
    for (std::uint32_t id = 1; id <= 6000; ++id)
      d.handler.handle(proto::to_json(proto::Request{proto::StepStart{id, 0, "n1", 0, true, 0}}).dump(),
                       ar::healthd::Peer{0, 1});
  });
  RawClient c(d.socket_path);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send("{\"v\":1,\"type\":\"jobs\"}\n"));
  pollfd p{c.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1);   // the reply is being written...
  std::this_thread::sleep_for(1500ms);  // ...and not read, for five times the write timeout
  bool closed = false;
  auto got = c.read_all(5s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_GT(got.size(), 0u);
  EXPECT_EQ(got.find('\n'), std::string::npos) << "the whole reply of " << got.size() << " bytes was kept for it";
  // And the daemon serves others.
  EXPECT_TRUE(ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 2s));
}

namespace {

// A flooding process: setuid to `uid`, opens `count` connections (a third idle, a third with half
// a line, a third with thousands of requests whose answers it never reads), reports how many it
// opened and how many were answered `busy`, then keeps connecting until killed. Only system
// calls after fork: the parent has threads.
// How long a flooder waits for the server to reach its probe: under TSan, with this many threads
// and processes, the server runs tens of times slower than in the dev build.
#if defined(AR_TEST_TSAN) || defined(AR_TEST_ASAN)
constexpr int kProbeWaitMs = 180000;
#else
constexpr int kProbeWaitMs = 30000;
#endif

[[noreturn]] void flood(uid_t uid, const std::string& path, int count, int report_fd, const std::string& unread) {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(90);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  static int fds[4096];
  int opened = 0;
  for (int i = 0; i < count && i < 4096; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) break;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      continue;
    }
    if (i % 3 == 1) (void)::send(fd, "{\"v\":1,\"ty", 10, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (i % 3 == 2) (void)::send(fd, unread.data(), unread.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    fds[opened++] = fd;
  }
  // The server accepts in order: once a connection opened after all of these is answered (busy,
  // by now), every one of them has been let in or turned away.
  int probe = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (probe < 0 || ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) ::_exit(91);
  (void)::send(probe, kPing.data(), kPing.size(), MSG_NOSIGNAL);
  pollfd answered{probe, POLLIN, 0};
  if (::poll(&answered, 1, kProbeWaitMs) != 1) ::_exit(92);
  // Refused: answered busy, or closed (a reset when the server left request bytes unread). Held:
  // nothing to read, or answers to its requests.
  int busy = 0;
  for (int i = 0; i < opened; ++i) {
    char b[512];
    auto n = ::recv(fds[i], b, sizeof(b) - 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n > 0) {
      b[n] = 0;
      if (!std::strstr(b, "\"busy\"")) continue;
    }
    ++busy;
  }
  int report[2] = {opened, busy};
  (void)!::write(report_fd, report, sizeof(report));
  for (;;) {  // knock, be refused, knock again
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0)
      (void)::send(fd, kPing.data(), kPing.size(), MSG_NOSIGNAL);
    if (fd >= 0) ::close(fd);
    ::usleep(1000);
  }
}

}  // namespace

TEST(SocketServer, AnUnprivilegedFloodDoesNotDelayRootsLifecycleMessages) {
  ASSERT_EQ(::geteuid(), 0u) << "needs root to flood as other uids";
  ar::healthd::ServerLimits limits;
  limits.max_connections = 64;
  limits.root_reserved = 16;  // users share 48
  limits.max_connections_per_uid = 20;
  ar::test::RunningDaemon d("n1", "", limits);
  ::chmod(d.dir.path().c_str(), 0755);  // the flooders are not root

  std::string unread;
  for (int i = 0; i < 2000; ++i) unread += "{\"v\":1,\"type\":\"status\"}\n";
  const std::vector<uid_t> uids = {65534, 65533, 65532, 65531};
  std::vector<pid_t> children;
  std::vector<int> reports;
  for (auto uid : uids) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) flood(uid, d.socket_path, 600, p[1], unread);
    ::close(p[1]);
    children.push_back(pid);
    reports.push_back(p[0]);
  }
  int held = 0;
  for (std::size_t i = 0; i < uids.size(); ++i) {
    int report[2] = {0, 0};
    ASSERT_EQ(::read(reports[i], report, sizeof(report)), static_cast<ssize_t>(sizeof(report)));
    ::close(reports[i]);
    EXPECT_EQ(report[0], 600) << "uid " << uids[i] << " could not even connect";
    EXPECT_GT(report[1], 0) << "uid " << uids[i] << " was never told busy";
    EXPECT_LE(report[0] - report[1], 20) << "uid " << uids[i] << " holds more than its cap";
    held += report[0] - report[1];
  }
  EXPECT_LE(held, 48) << "users took the slots kept for root";

  // What slurmstepd sends, one connection per message as the plugin does. What this test guards is
  // the slots kept for root: without them root's connect is refused or waits for a flooder's slot to
  // close (seconds, or for ever), so each call must be answered within 1 s, five times the plugin's
  // 200 ms; the latency itself is a figure for a benchmark, not an assertion on a 2-core machine
  // that other work shares (a plain build here saw 209 ms while a CI run started beside it). Under a
  // sanitizer everything runs slower, the daemon's side included (ASan about 10 times, TSan with
  // this many threads and processes up to 50 times): the budget scales with it.
#if defined(AR_TEST_TSAN)
  const auto budget = 1000ms * 50;
#elif defined(AR_TEST_ASAN)
  const auto budget = 1000ms * 10;
#else
  const auto budget = 1000ms;
#endif
  auto worst = Clock::duration::zero();
  int failed = 0;
  for (std::uint32_t job = 1; job <= 50; ++job) {
    for (const auto& m : std::vector<proto::Request>{proto::StepStart{job, 0, "n1", 1000, true, 0},
                                                      proto::TaskExit{job, 0, "n1", 0, 0},
                                                      proto::StepEnd{job, 0, "n1"}}) {
      const auto t0 = Clock::now();
      auto r = ar::call(d.socket_path, proto::to_json(m), budget);
      worst = std::max(worst, Clock::now() - t0);
      if (!r) ++failed;
    }
  }
  for (auto pid : children) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  EXPECT_EQ(failed, 0);
  EXPECT_LT(worst, budget) << std::chrono::duration_cast<std::chrono::milliseconds>(worst).count() << " ms";
  std::printf("the slowest lifecycle call under the flood: %lld ms (the plugin waits 200 ms)\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(worst).count()));
  std::size_t ended = 0;
  on_loop(d, [&] {
    for (const auto& [id, job] : d.registry.jobs()) ended += job.running() ? 0 : 1;
  });
  EXPECT_EQ(ended, 50u);
}

TEST(SocketServer, OutOfDescriptorsTheServerBacksOffWithOneLogLine) {
#ifdef AR_TEST_UBSAN
  // UBSan's vptr check opens a pipe to test whether memory is readable when its type cache misses;
  // with no descriptor left it reports a false "invalid vptr" in fmt's buffer and halts (seen in the
  // asan tier). The release tier runs this test.
  GTEST_SKIP() << "UBSan needs descriptors of its own; this test takes them all";
#endif
  ar::test::LogCapture log;
  ar::test::RunningDaemon d("n1", "", limits_with(10s, 10s, 10s));
  // A child (with its own descriptor table) holds connections while this process, the server's,
  // may open only a few more descriptors.
  int go[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Its copy of the write end closed: a parent that dies early ends the child's reads with EOF,
    // instead of leaving it (and ctest, which waits on its output) blocked for good.
    ::close(go[1]);
    char c;
    (void)!::read(go[0], &c, 1);  // until the parent's limit is down
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, d.socket_path.c_str(), sizeof(addr.sun_path) - 1);
    for (int i = 0; i < 100; ++i) {
      int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd >= 0) (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    }
    (void)!::read(go[0], &c, 1);  // until the parent is done
    ::_exit(0);
  }
  ::close(go[0]);
  int open_now = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++open_now;
  rlimit saved{};
  ::getrlimit(RLIMIT_NOFILE, &saved);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(open_now + 5);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  (void)!::write(go[1], "g", 1);
  std::this_thread::sleep_for(1500ms);  // the server is out of descriptors all this while
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  auto cpu = [](const rusage& r) {
    return std::chrono::seconds(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           std::chrono::microseconds(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
  };
  EXPECT_LT(cpu(after) - cpu(before), 300ms) << "accept spins";
  // With descriptors back, the connections waiting are accepted and served again.
  EXPECT_TRUE(ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 3s));
  (void)!::write(go[1], "x", 1);
  ::close(go[1]);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(log.count("server: accept: "), 1u) << log.text();
}

// A daemon SIGKILLed while a child of its (scontrol, a script) still runs: the child must not hold
// the listener, or the restarted daemon finds "another daemon is listening" and refuses to start.
TEST(SocketServer, ADaemonKilledWhileItsChildRunsCanBeRestarted) {
  ar::test::TempDir dir;
  const auto path = (dir / "healthd.sock").string();
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  pid_t daemon = ::fork();
  ASSERT_GE(daemon, 0);
  if (daemon == 0) {
    ar::healthd::JobRegistry registry(dir / "jobs.json");
    ar::healthd::DaemonInfo info{"n1", "t", path, "", "", ar::healthd::WallClock::now()};
    ar::healthd::RequestHandler handler(info, registry, [] {});
    asio::io_context io;
    ar::healthd::SocketServer server(io, path, handler);
    if (!server.start()) ::_exit(1);
    pid_t child = ::fork();
    if (child == 0) {
      ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    (void)!::write(ready[1], &child, sizeof(child));
    io.run();
    ::_exit(0);
  }
  ::close(ready[1]);
  pid_t child = 0;
  ASSERT_EQ(::read(ready[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  ::close(ready[0]);
  // Until the child has exec'd it holds the fork's copies of every descriptor, close-on-exec or not.
  const auto comm = "/proc/" + std::to_string(child) + "/comm";
  for (int i = 0; i < 500; ++i) {
    std::string name;
    std::ifstream(comm) >> name;
    if (name == "sleep") break;
    std::this_thread::sleep_for(10ms);
  }
  ::kill(daemon, SIGKILL);
  ::waitpid(daemon, nullptr, 0);
  ASSERT_TRUE(std::filesystem::is_socket(path));  // left behind, as a SIGKILL leaves it
  ASSERT_EQ(::kill(child, 0), 0);                  // and the child still runs

  ar::healthd::JobRegistry registry(dir / "jobs.json");
  ar::healthd::DaemonInfo info{"n1", "t", path, "", "", ar::healthd::WallClock::now()};
  ar::healthd::RequestHandler handler(info, registry, [] {});
  asio::io_context io;
  ar::healthd::SocketServer restarted(io, path, handler);
  auto r = restarted.start();
  ::kill(child, SIGKILL);
  EXPECT_TRUE(r) << r.error();
}
