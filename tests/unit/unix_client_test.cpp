// The deadline-bounded socket client the plugin uses to reach healthd.
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "auto_resume/unix_client.hpp"
#include "temp_dir.hpp"

using namespace std::chrono_literals;

// Seen in the flood test under TSan: with the listener's backlog full, connect() answered EAGAIN,
// the client waited for POLLOUT (which an unconnected Unix socket reports at once) and went on with
// a socket that was never connected, so slurmstepd's message failed at once instead of waiting its
// 200 ms for the flood to drain.
TEST(UnixClient, AFullBacklogIsWaitedOutUntilTheDeadlineNotTakenForAConnection) {
  ar::test::TempDir dir;
  const auto path = (dir / "s.sock").string();
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  std::vector<int> fillers;  // nobody accepts: these fill the backlog
  for (int i = 0; i < 64; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ASSERT_EQ(errno, EAGAIN);
      ::close(fd);
      break;
    }
    fillers.push_back(fd);
  }
  ASSERT_FALSE(fillers.empty());
  std::thread drainer([&] {  // the daemon catches up after 100 ms, and for a second accepts all that comes
    std::this_thread::sleep_for(100ms);
    ::fcntl(listener, F_SETFL, O_NONBLOCK);
    for (auto until = std::chrono::steady_clock::now() + 1s; std::chrono::steady_clock::now() < until;) {
      int fd = ::accept(listener, nullptr, nullptr);
      if (fd >= 0) ::close(fd);
      else std::this_thread::sleep_for(1ms);
    }
  });
  auto client = ar::UnixClient::connect(path, ar::UnixClient::Clock::now() + 3s);
  drainer.join();
  ASSERT_TRUE(client) << client.error();
  sockaddr_un peer{};
  socklen_t len = sizeof(peer);
  EXPECT_EQ(::getpeername(client->fd(), reinterpret_cast<sockaddr*>(&peer), &len), 0) << std::strerror(errno);
  for (int fd : fillers) ::close(fd);
  ::close(listener);
}

TEST(UnixClient, ABacklogThatStaysFullFailsAtTheDeadlineSayingSo) {
  ar::test::TempDir dir;
  const auto path = (dir / "s.sock").string();
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 64; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      break;
    }
    fillers.push_back(fd);
  }
  const auto t0 = ar::UnixClient::Clock::now();
  auto client = ar::UnixClient::connect(path, t0 + 200ms);
  ASSERT_FALSE(client);
  EXPECT_NE(client.error().find("backlog"), std::string::npos) << client.error();
  EXPECT_GE(ar::UnixClient::Clock::now() - t0, 190ms);
  for (int fd : fillers) ::close(fd);
  ::close(listener);
}
