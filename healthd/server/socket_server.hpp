// Serves the plugin/healthctl protocol on a Unix stream socket with asio, one line per message.
//
// Connections are independent: a client that sends garbage gets an error reply and, if the framing
// is lost (a message over the size limit), the connection is closed after that reply.
//
// The socket is open to every user on the node, so no client may hold more than its share
// (ServerLimits): connections are capped per unprivileged uid and in all, with slots kept for root so
// slurmstepd's lifecycle messages are always served; a connection over a cap is answered `busy` and
// closed at once. A connection that sends nothing for the idle timeout, takes longer than the message
// timeout to finish a message, or does not read its reply within the write timeout is closed.
// When accept fails for want of descriptors, accepting pauses (100 ms doubling to 1 s) rather
// than spin, with one log line per episode.
//
// Every descriptor the server opens is close-on-exec, so no child (scontrol, scripts, dcgmi) holds
// the listening socket or a client's connection.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <memory>
#include <string>

#include <asio.hpp>

#include "config/server_limits.hpp"
#include "runtime/log_budget.hpp"
#include "request_handler.hpp"

namespace ar::healthd {

class ConnectionTable;

class SocketServer {
 public:
  SocketServer(asio::io_context& io, std::filesystem::path path, RequestHandler& handler, ServerLimits limits = {});
  ~SocketServer();

  // Binds and listens. A stale socket file left by a crashed daemon is replaced; a socket on which
  // another daemon still answers is an error, so two daemons never fight over one node.
  std::expected<void, std::string> start();
  void stop();

 private:
  void wait_for_clients();
  void accept_ready();
  void admit(int fd);
  void back_off(int error);

  asio::io_context& io_;
  std::filesystem::path path_;
  RequestHandler& handler_;
  ServerLimits limits_;
  std::shared_ptr<ConnectionTable> table_;
  asio::local::stream_protocol::acceptor acceptor_;
  asio::steady_timer backoff_timer_;
  std::chrono::milliseconds backoff_{0};  // 0: accepting normally
  LogBudget busy_log_{1};
  bool listening_ = false;
};

// Raises the soft limit on open files to the hard limit (the unit sets LimitNOFILE): connections,
// state files and children's pipes all need descriptors. Returns the soft limit now in force.
std::uint64_t raise_open_file_limit();

}  // namespace ar::healthd
