#include "socket_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include "auto_resume/unix_client.hpp"

namespace ar::healthd {
namespace {

using asio::local::stream_protocol;

Peer peer_of(stream_protocol::socket& s) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  Peer p;
  // Without credentials the peer is treated as an unknown, unprivileged user.
  p.uid = static_cast<uid_t>(-1);
  if (::getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    p.uid = cred.uid;
    p.pid = cred.pid;
  }
  return p;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(stream_protocol::socket socket, RequestHandler& handler, std::chrono::milliseconds idle_timeout)
      : socket_(std::move(socket)),
        handler_(handler),
        idle_timeout_(idle_timeout),
        timer_(socket_.get_executor()),
        buffer_(proto::kMaxMessageBytes + 1) {
    peer_ = peer_of(socket_);
  }

  void start() { read_next(); }

 private:
  void arm_idle_timer() {
    timer_.expires_after(idle_timeout_);
    timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec) {
        asio::error_code ignored;
        self->socket_.close(ignored);
      }
    });
  }

  void read_next() {
    arm_idle_timer();
    asio::async_read_until(socket_, buffer_, '\n', [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
      self->on_read(ec, n);
    });
  }

  void on_read(const asio::error_code& ec, std::size_t n) {
    timer_.cancel();
    if (ec == asio::error::not_found) {
      // The line outgrew the buffer: framing is lost, so answer once and close.
      reply(proto::error_reply({proto::err::kTooLarge, "message exceeds the limit of " +
                                                           std::to_string(proto::kMaxMessageBytes) + " bytes"}),
            /*close_after=*/true);
      return;
    }
    if (ec) return;  // EOF or closed: nothing to answer
    std::string line(asio::buffers_begin(buffer_.data()), asio::buffers_begin(buffer_.data()) + static_cast<long>(n) - 1);
    buffer_.consume(n);
    nlohmann::json answer;
    try {
      answer = handler_.handle(line, peer_);
    } catch (const std::exception& e) {
      spdlog::error("server: handling a message failed: {}", e.what());
      answer = proto::error_reply({proto::err::kInternal, e.what()});
    }
    reply(answer, false);
  }

  void reply(const nlohmann::json& answer, bool close_after) {
    out_ = proto::encode(answer);
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this(), close_after](const asio::error_code& ec, std::size_t) {
                        if (ec || close_after) {
                          asio::error_code ignored;
                          self->socket_.shutdown(stream_protocol::socket::shutdown_both, ignored);
                          self->socket_.close(ignored);
                          return;
                        }
                        self->read_next();
                      });
  }

  stream_protocol::socket socket_;
  RequestHandler& handler_;
  std::chrono::milliseconds idle_timeout_;
  asio::steady_timer timer_;
  asio::streambuf buffer_;
  std::string out_;
  Peer peer_;
};

}  // namespace

SocketServer::SocketServer(asio::io_context& io, std::filesystem::path path, RequestHandler& handler,
                           std::chrono::milliseconds idle_timeout)
    : io_(io), path_(std::move(path)), handler_(handler), idle_timeout_(idle_timeout), acceptor_(io) {}

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

  asio::error_code ec;
  acceptor_.open(stream_protocol(), ec);
  if (!ec) acceptor_.bind(stream_protocol::endpoint(path_.string()), ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return std::unexpected("listen on " + path_.string() + ": " + ec.message());
  // Anyone on the node may query (healthctl status/jobs); lifecycle messages are checked by peer uid.
  ::chmod(path_.c_str(), 0666);
  listening_ = true;
  accept_next();
  return {};
}

void SocketServer::stop() {
  if (!listening_) return;
  listening_ = false;
  asio::error_code ignored;
  acceptor_.close(ignored);
  std::error_code fs_ec;
  std::filesystem::remove(path_, fs_ec);
}

void SocketServer::accept_next() {
  acceptor_.async_accept([this](const asio::error_code& ec, stream_protocol::socket socket) {
    if (ec == asio::error::operation_aborted || !listening_) return;
    if (!ec) std::make_shared<Session>(std::move(socket), handler_, idle_timeout_)->start();
    else spdlog::warn("server: accept: {}", ec.message());
    accept_next();
  });
}

}  // namespace ar::healthd
