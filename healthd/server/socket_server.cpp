#include "socket_server.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "auto_resume/unix_client.hpp"
#include "runtime/accept_batch.hpp"

namespace ar::healthd {

using asio::local::stream_protocol;
using Clock = std::chrono::steady_clock;

// Who holds how many connections. Shared with the sessions, which release their slot when they close.
class ConnectionTable {
 public:
  explicit ConnectionTable(const ServerLimits& limits) : limits_(limits) {}

  // Takes a slot for a new connection of `uid`; otherwise says why there is none.
  std::optional<std::string> take(uid_t uid, bool root) {
    if (total_ >= limits_.max_connections)
      return "all " + std::to_string(limits_.max_connections) + " connections are taken";
    if (!root) {
      const auto for_users = limits_.max_connections - std::min(limits_.root_reserved, limits_.max_connections);
      if (unprivileged_ >= for_users)
        return "all " + std::to_string(for_users) + " connections open to users are taken";
      auto& held = per_uid_[uid];
      if (held >= limits_.max_connections_per_uid)
        return "uid " + std::to_string(uid) + " already holds " + std::to_string(held) + " connections (the limit)";
      ++held;
      ++unprivileged_;
    }
    ++total_;
    return std::nullopt;
  }

  void give_back(uid_t uid, bool root) {
    --total_;
    if (root) return;
    --unprivileged_;
    if (auto it = per_uid_.find(uid); it != per_uid_.end() && --it->second == 0) per_uid_.erase(it);
  }

 private:
  ServerLimits limits_;
  std::uint32_t total_ = 0;
  std::uint32_t unprivileged_ = 0;
  std::map<uid_t, std::uint32_t> per_uid_;
};

namespace {

Peer peer_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  Peer p;
  // Without credentials the peer is treated as an unknown, unprivileged user.
  p.uid = static_cast<uid_t>(-1);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    p.uid = cred.uid;
    p.pid = cred.pid;
  }
  return p;
}

// Answers a connection that gets no slot and closes it, without waiting for anything: its
// send buffer is empty, so the one short line fits.
void refuse(int fd, const std::string& why) {
  auto line = proto::encode(proto::error_reply({proto::err::kBusy, why + "; try again later"}));
  (void)::send(fd, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  // Unread request bytes would make the close reset the connection before the client reads the
  // reply: take what already arrived (at most one message's worth).
  static std::array<char, 16384> sink;
  for (std::size_t taken = 0; taken <= proto::kMaxMessageBytes;) {
    auto n = ::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    taken += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

// One connection: reads lines, answers each in turn, and keeps the three deadlines (idle, message,
// write) with one timer, since only one of them applies at a time.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(stream_protocol::socket socket, Peer peer, RequestHandler& handler, const ServerLimits& limits,
          std::shared_ptr<ConnectionTable> table)
      : socket_(std::move(socket)),
        peer_(peer),
        handler_(handler),
        limits_(limits),
        table_(std::move(table)),
        timer_(socket_.get_executor()) {}
  ~Session() { release_slot(); }

  void start() {
    last_byte_ = Clock::now();
    read_more();
  }

 private:
  void read_more() {
    arm_read_deadline();
    socket_.async_read_some(asio::buffer(chunk_), [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
      self->on_bytes(ec, n);
    });
  }

  // Idle time counts from the last byte received, so a slow but steady writer is not cut; a message
  // begun must still end within the message timeout, so a trickle cannot hold the slot forever.
  void arm_read_deadline() {
    auto deadline = last_byte_ + limits_.idle_timeout;
    const bool partial = !in_.empty();
    if (partial) deadline = std::min(deadline, message_started_ + limits_.message_timeout);
    arm(deadline, [partial](Session& s) {
      if (!partial) return s.close();  // idle: nobody is waiting for an answer
      s.reply(proto::error_reply({proto::err::kTimeout, "message not complete within " +
                                                             std::to_string(s.limits_.message_timeout.count()) + " ms"}),
              /*close_after=*/true);
    });
  }

  void on_bytes(const asio::error_code& ec, std::size_t n) {
    if (closing_) return;
    if (ec) return close();  // EOF or reset: nothing to answer
    const auto now = Clock::now();
    if (in_.empty()) message_started_ = now;
    in_.append(chunk_.data(), n);
    last_byte_ = now;
    serve_next();
  }

  // Answers the next complete line already received, or reads more.
  void serve_next() {
    const auto nl = in_.find('\n');
    if (nl == std::string::npos) {
      if (in_.size() > proto::kMaxMessageBytes) {
        // The line outgrew the limit: framing is lost, so answer once and close.
        return reply(proto::error_reply({proto::err::kTooLarge, "message exceeds the limit of " +
                                                                    std::to_string(proto::kMaxMessageBytes) + " bytes"}),
                     /*close_after=*/true);
      }
      return read_more();
    }
    const std::string line = in_.substr(0, nl);
    in_.erase(0, nl + 1);
    if (!in_.empty()) message_started_ = Clock::now();
    nlohmann::json answer;
    try {
      answer = handler_.handle(line, peer_);
    } catch (const std::exception& e) {
      spdlog::error("server: handling a message failed: {}", e.what());
      answer = proto::error_reply({proto::err::kInternal, e.what()});
    }
    reply(answer, /*close_after=*/false);
  }

  void reply(const nlohmann::json& answer, bool close_after) {
    if (const auto ok = answer.find("ok"); ok != answer.end() && *ok == false)
      handler_.observe_error(answer.value("error", nlohmann::json::object()).value("code", std::string(proto::err::kInternal)));
    try {
      out_ = proto::encode(answer);
    } catch (const std::exception& e) {
      spdlog::error("server: encoding a reply failed: {}", e.what());
      out_ = proto::encode(proto::error_reply({proto::err::kInternal, "the reply could not be encoded"}));
    }
    closing_ = closing_ || close_after;
    // A client that does not read its reply holds the slot and the buffer: not for long.
    arm(Clock::now() + limits_.write_timeout, [](Session& s) { s.close(); });
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this(), close_after](const asio::error_code& ec, std::size_t) {
      if (ec || close_after) return self->close();
      self->last_byte_ = Clock::now();  // idle from the answer on: the client was waiting for it
      self->serve_next();
    });
  }

  template <typename F>
  void arm(Clock::time_point deadline, F on_expiry) {
    // Re-arming cancels the previous wait, but one already expired may still run: the generation
    // tells a stale expiry from the current one.
    const auto generation = ++timer_generation_;
    timer_.expires_at(deadline);
    timer_.async_wait([self = shared_from_this(), generation, on_expiry](const asio::error_code& ec) {
      if (ec || generation != self->timer_generation_ || self->closed_) return;
      on_expiry(*self);
    });
  }

  void close() {
    if (closed_) return;
    closed_ = closing_ = true;
    asio::error_code ignored;
    timer_.cancel();
    socket_.shutdown(stream_protocol::socket::shutdown_both, ignored);
    socket_.close(ignored);
    release_slot();
  }

  void release_slot() {
    if (!table_) return;
    table_->give_back(peer_.uid, is_root(peer_));
    table_.reset();
  }

  stream_protocol::socket socket_;
  Peer peer_;
  RequestHandler& handler_;
  const ServerLimits limits_;
  std::shared_ptr<ConnectionTable> table_;  // null once the slot is given back
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  std::array<char, 4096> chunk_{};
  std::string in_;  // bytes received and not yet answered
  std::string out_;
  Clock::time_point last_byte_;
  Clock::time_point message_started_;
  bool closing_ = false;  // no more requests are served
  bool closed_ = false;
};

}  // namespace

std::uint64_t raise_open_file_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur;
}

SocketServer::SocketServer(asio::io_context& io, std::filesystem::path path, RequestHandler& handler,
                           ServerLimits limits)
    : io_(io),
      path_(std::move(path)),
      handler_(handler),
      limits_(limits),
      acceptor_(io),
      backoff_timer_(io) {}

SocketServer::~SocketServer() { stop(); }

std::expected<void, std::string> SocketServer::start() {
  std::error_code fs_ec;
  std::filesystem::create_directories(path_.parent_path(), fs_ec);
  if (fs_ec) return std::unexpected("socket directory " + path_.parent_path().string() + ": " + fs_ec.message());

  if (std::filesystem::is_socket(path_, fs_ec)) {
    auto probe = UnixClient::connect(path_.string(), UnixClient::Clock::now() + std::chrono::milliseconds(500));
    if (probe) return std::unexpected("another daemon is listening on " + path_.string());
    std::filesystem::remove(path_, fs_ec);  // stale: left by a daemon that died
  } else if (std::filesystem::exists(path_, fs_ec)) {
    return std::unexpected(path_.string() + " exists and is not a socket; refusing to replace it");
  }

  // Connections must never run the daemon out of descriptors for its state files and children.
  constexpr std::uint64_t kKeptForTheRest = 256;
  const auto fd_limit = raise_open_file_limit();
  if (fd_limit > 2 * kKeptForTheRest && limits_.max_connections > fd_limit - kKeptForTheRest) {
    spdlog::warn("server: max_connections {} lowered to {}: the open-file limit is {} (LimitNOFILE)",
                 limits_.max_connections, fd_limit - kKeptForTheRest, fd_limit);
    limits_.max_connections = static_cast<std::uint32_t>(fd_limit - kKeptForTheRest);
  }
  table_ = std::make_shared<ConnectionTable>(limits_);

  // Opened here rather than by asio, which creates sockets without SOCK_CLOEXEC: there is no moment
  // at which a child started by another thread could inherit the listener.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::unexpected("listen on " + path_.string() + ": socket: " + std::strerror(errno));
  asio::error_code ec;
  acceptor_.assign(stream_protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return std::unexpected("listen on " + path_.string() + ": " + ec.message());
  }
  acceptor_.bind(stream_protocol::endpoint(path_.string()), ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    acceptor_.close();
    return std::unexpected("listen on " + path_.string() + ": " + ec.message());
  }
  // Anyone on the node may query (healthctl status/jobs); lifecycle messages are checked by peer uid.
  ::chmod(path_.c_str(), 0666);
  listening_ = true;
  wait_for_clients();
  return {};
}

void SocketServer::stop() {
  if (!listening_) return;
  listening_ = false;
  asio::error_code ignored;
  acceptor_.close(ignored);
  backoff_timer_.cancel();
  std::error_code fs_ec;
  std::filesystem::remove(path_, fs_ec);
}

void SocketServer::wait_for_clients() {
  acceptor_.async_wait(stream_protocol::acceptor::wait_read, [this](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted || !listening_) return;
    accept_ready();
  });
}

// A bounded batch per wake-up (runtime/accept_batch.hpp): a flood of connects must leave turns for
// the sessions.
void SocketServer::accept_ready() {
  constexpr int kBatch = 64;
  const auto taken = accept_batch(acceptor_.native_handle(), kBatch, [this](int fd) { admit(fd); });
  if (taken.stop == AcceptBatch::Stop::failed) return back_off(taken.error);
  if (taken.stop == AcceptBatch::Stop::drained) backoff_ = std::chrono::milliseconds(0);
  wait_for_clients();
}

void SocketServer::admit(int fd) {
  const Peer peer = peer_of(fd);
  if (auto why = table_->take(peer.uid, is_root(peer))) {
    if (busy_log_.allow()) {
      auto more = busy_log_.take_suppressed();
      spdlog::warn("server: refused a connection from pid {} uid {}: {}{}", peer.pid, peer.uid, *why,
                   more ? " (and " + std::to_string(more) + " more since the last such line)" : "");
    }
    handler_.observe_error(proto::err::kBusy);
    return refuse(fd, *why);
  }
  stream_protocol::socket socket(io_);
  asio::error_code ec;
  socket.assign(stream_protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    table_->give_back(peer.uid, is_root(peer));
    return;
  }
  std::make_shared<Session>(std::move(socket), peer, handler_, limits_, table_)->start();
}

// Out of descriptors (EMFILE, ENFILE) or kernel memory: accepting again at once would fail again
// and spin. Wait 100 ms, doubling to 1 s, and say so once per episode, not once per attempt.
void SocketServer::back_off(int error) {
  if (backoff_.count() == 0) {
    spdlog::error("server: accept: {}; retrying every 100 ms to 1 s until it succeeds", std::strerror(error));
    backoff_ = std::chrono::milliseconds(100);
  } else {
    backoff_ = std::min(2 * backoff_, std::chrono::milliseconds(1000));
  }
  backoff_timer_.expires_after(backoff_);
  backoff_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || !listening_) return;
    accept_ready();
  });
}

}  // namespace ar::healthd
