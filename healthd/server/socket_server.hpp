// Serves the plugin/healthctl protocol on a Unix stream socket with asio, one line per message.
//
// Connections are independent: a client that sends garbage gets an error reply and, if the framing
// is lost (a message over the size limit), the connection is closed after that reply. A connection
// idle for longer than the idle timeout is closed so stuck clients cannot pile up.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <asio.hpp>

#include "request_handler.hpp"

namespace ar::healthd {

class SocketServer {
 public:
  SocketServer(asio::io_context& io, std::filesystem::path path, RequestHandler& handler,
               std::chrono::milliseconds idle_timeout = std::chrono::seconds(60));
  ~SocketServer();

  // Binds and listens. A stale socket file left by a crashed daemon is replaced; a socket on which
  // another daemon still answers is an error, so two daemons never fight over one node.
  std::expected<void, std::string> start();
  void stop();

 private:
  void accept_next();

  asio::io_context& io_;
  std::filesystem::path path_;
  RequestHandler& handler_;
  std::chrono::milliseconds idle_timeout_;
  asio::local::stream_protocol::acceptor acceptor_;
  bool listening_ = false;
};

}  // namespace ar::healthd
