// accept_batch (runtime/accept_batch.hpp): the servers' way of taking waiting connections, a bounded
// batch per turn, each close-on-exec and non-blocking from its first moment.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/accept_batch.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;

namespace {

// A non-blocking listening Unix socket at `path`, and clients connected to it.
struct Listener {
  int fd = -1;
  std::vector<int> clients;
  explicit Listener(const std::string& path) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd, 16), 0);
  }
  void connect_clients(const std::string& path, int n) {
    for (int i = 0; i < n; ++i) {
      int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
      EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
      clients.push_back(c);
    }
  }
  ~Listener() {
    for (int c : clients) ::close(c);
    ::close(fd);
  }
};

}  // namespace

TEST(AcceptBatch, TakesAtMostABatchPerTurnThenSaysTheQueueIsEmpty) {
  ar::test::TempDir dir;
  const std::string path = (dir / "s.sock").string();
  Listener listener(path);
  listener.connect_clients(path, 3);
  std::vector<int> admitted;
  auto admit = [&](int fd) { admitted.push_back(fd); };

  auto first = accept_batch(listener.fd, 2, admit);
  EXPECT_EQ(first.stop, AcceptBatch::Stop::batch_full);
  EXPECT_EQ(first.taken, 2);
  auto second = accept_batch(listener.fd, 2, admit);
  EXPECT_EQ(second.stop, AcceptBatch::Stop::drained);  // the third, then nothing waits
  EXPECT_EQ(second.taken, 1);
  ASSERT_EQ(admitted.size(), 3u);
  for (int fd : admitted) {
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "a connection is close-on-exec from the start";
    EXPECT_NE(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0) << "and non-blocking";
    ::close(fd);
  }
}

TEST(AcceptBatch, AFailureIsSaidWithItsErrnoNotRetried) {
  int not_a_socket[2];
  ASSERT_EQ(::pipe(not_a_socket), 0);
  int calls = 0;
  auto r = accept_batch(not_a_socket[0], 64, [&](int) { ++calls; });
  EXPECT_EQ(r.stop, AcceptBatch::Stop::failed);
  EXPECT_EQ(r.error, ENOTSOCK);
  EXPECT_EQ(calls, 0);
  ::close(not_a_socket[0]);
  ::close(not_a_socket[1]);
}
