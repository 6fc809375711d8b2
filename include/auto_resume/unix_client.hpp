// A small blocking client for the healthd socket, with a hard deadline on every operation.
//
// Used by the SPANK plugin (inside slurmstepd, where a hang would hang the job) and by healthctl.
// Nothing here may block past the caller's deadline: the socket is non-blocking and every wait is a
// poll(2) bounded by the time left. Writes use MSG_NOSIGNAL so a daemon that went away cannot kill
// slurmstepd with SIGPIPE. The descriptor is close-on-exec so user tasks never inherit it.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstring>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "auto_resume/protocol.hpp"

namespace ar {

class UnixClient {
 public:
  using Clock = std::chrono::steady_clock;

  UnixClient(UnixClient&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UnixClient& operator=(UnixClient&& o) noexcept {
    if (this != &o) {
      close_fd();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UnixClient(const UnixClient&) = delete;
  UnixClient& operator=(const UnixClient&) = delete;
  ~UnixClient() { close_fd(); }

  // Connects to the socket at `path`, giving up at `deadline`. The error says what failed and why.
  static std::expected<UnixClient, std::string> connect(const std::string& path, Clock::time_point deadline) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path))
      return std::unexpected("socket path '" + path + "' is empty or too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return std::unexpected(std::string("socket: ") + std::strerror(errno));
    UnixClient c(fd);
    for (;;) {
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return c;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) break;
      // A Unix socket whose listener's backlog is full answers EAGAIN and, unlike TCP, leaves nothing
      // in progress: the socket stays unconnected (waiting for POLLOUT returns at once and the first
      // send fails). So knock again until the deadline, as a flood of other clients drains.
      if (Clock::now() >= deadline) return std::unexpected("connect " + path + ": the listener's backlog stayed full");
      ::poll(nullptr, 0, 2);
    }
    if (errno != EINPROGRESS) return std::unexpected("connect " + path + ": " + std::strerror(errno));
    if (auto w = c.wait(POLLOUT, deadline); !w) return std::unexpected("connect " + path + ": " + w.error());
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) return std::unexpected("connect " + path + ": " + std::strerror(so_error));
    return c;
  }

  // Sends one framed message and returns the reply line (without its newline).
  std::expected<std::string, std::string> request(std::string_view framed, Clock::time_point deadline) {
    std::size_t sent = 0;
    while (sent < framed.size()) {
      ssize_t n = ::send(fd_, framed.data() + sent, framed.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (auto w = wait(POLLOUT, deadline); !w) return std::unexpected("send: " + w.error());
        continue;
      }
      return std::unexpected(std::string("send: ") + std::strerror(errno));
    }
    return read_line(deadline);
  }

  // Reads up to and excluding the next '\n'; bytes after it are kept for the next call.
  std::expected<std::string, std::string> read_line(Clock::time_point deadline) {
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (buffer_.size() > proto::kMaxReplyBytes) return std::unexpected(std::string("reply exceeds the size limit"));
      char chunk[4096];
      ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n > 0) {
        buffer_.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) return std::unexpected(std::string("connection closed by the daemon"));
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (auto w = wait(POLLIN, deadline); !w) return std::unexpected("receive: " + w.error());
        continue;
      }
      return std::unexpected(std::string("receive: ") + std::strerror(errno));
    }
  }

  // The connected socket, for callers that need to look at it (tests: getpeername).
  int fd() const { return fd_; }

 private:
  explicit UnixClient(int fd) : fd_(fd) {}

  void close_fd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  std::expected<void, std::string> wait(short events, Clock::time_point deadline) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return std::unexpected(std::string("timed out"));
      pollfd p{fd_, events, 0};
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r > 0) return {};
      if (r < 0 && errno != EINTR) return std::unexpected(std::string("poll: ") + std::strerror(errno));
    }
  }

  int fd_ = -1;
  std::string buffer_;
};

// One request, one reply, one connection: what healthctl and tests need.
inline std::expected<nlohmann::json, std::string> call(const std::string& socket_path, const nlohmann::json& request,
                                                       std::chrono::milliseconds timeout) {
  auto deadline = UnixClient::Clock::now() + timeout;
  auto client = UnixClient::connect(socket_path, deadline);
  if (!client) return std::unexpected(client.error());
  auto line = client->request(proto::encode(request), deadline);
  if (!line) return std::unexpected(line.error());
  auto reply = proto::parse_reply(*line);
  if (!reply) return std::unexpected(reply.error().code + ": " + reply.error().message);
  return *reply;
}

}  // namespace ar
