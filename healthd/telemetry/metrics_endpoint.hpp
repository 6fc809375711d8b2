// The HTTP listener of [metrics] listen: `GET /metrics` answered with the text a callback makes, on a
// thread of its own, single-threaded and asynchronous (standalone asio), so no connection ever holds
// a worker that a scrape would need.
//
// The port may be open to every user of the node (and to a network), so a client gets a bounded
// share and no more (issue 31: 40 slow connections of one user starved the civetweb server that was
// here before, two workers held 10 s each):
// - at most EndpointLimits::max_connections are open. A new connection is always taken: when all
//   are open, the one that has least claim goes (first one whose reply is already out and that is
//   only being closed, then the oldest still sending its request, then the oldest reply being
//   written), so a flood of connections that never finish a request cannot lock a scraper out;
// - the request head (request line and headers) must arrive whole within head_timeout of the
//   connect, counted from the connect and not from the last byte (a trickle does not extend it), and
//   within max_head_bytes;
// - the reply must be taken by the client within write_timeout.
// One request per connection (`Connection: close`). GET /metrics (a query string is ignored) is
// 200; another path 404; another method 405; a head that is not HTTP/1.x 400; a head over the size
// limit 431. Every descriptor is close-on-exec; accept pauses (100 ms doubling to 1 s) when the
// process runs out of descriptors rather than spin. Lines any client can cause are logged on a budget.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <expected>
#include <functional>
#include <memory>
#include <string>

namespace ar::healthd {

struct EndpointLimits {
  // Prometheus scrapes one at a time; a few scrapers and an admin's curl fit many times over.
  std::size_t max_connections = 64;
  // A scraper sends its request with its connect; 5 s is generous for a slow network.
  std::chrono::milliseconds head_timeout{5000};
  // The reply is some tens of KiB; a scraper that takes longer than its own scrape timeout (10 s by
  // default in Prometheus) has given up.
  std::chrono::milliseconds write_timeout{10000};
  // A scraper's head is a few hundred bytes.
  std::size_t max_head_bytes = 8192;
};

class MetricsEndpoint {
 public:
  using Body = std::function<std::string()>;

  // Binds `address` (an IPv4 address and port, port 0: one the system picks) and serves `body()`
  // until destroyed. A bind that fails is an error naming the cause ("bind: Address already in use").
  static std::expected<std::unique_ptr<MetricsEndpoint>, std::string> open(const sockaddr_in& address, Body body,
                                                                           EndpointLimits limits = {});
  // Closes the port and every connection and joins the thread.
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // The port listened on (the system's choice for port 0).
  int port() const;

 private:
  struct Impl;
  explicit MetricsEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ar::healthd
