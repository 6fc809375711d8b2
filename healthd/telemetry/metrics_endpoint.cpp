#include "telemetry/metrics_endpoint.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <list>
#include <string_view>
#include <thread>
#include <vector>

#include <asio.hpp>
#include <spdlog/spdlog.h>

#include "runtime/accept_batch.hpp"
#include "runtime/log_budget.hpp"

namespace ar::healthd {
// Named, not anonymous: MetricsEndpoint::Impl (declared in the header, so of external linkage) is a
// Server, and a class of external linkage may not have a base of internal linkage (GCC
// -Wsubobject-linkage, which it reports once this file is compiled in a unity batch).
namespace metrics_endpoint_detail {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// After the reply, what the client still sends is read and dropped for a moment before the close:
// closing on unread bytes would reset the connection and could destroy the reply in flight.
constexpr std::chrono::milliseconds kLinger{1000};
constexpr std::size_t kLingerBytes = 64 * 1024;
// Connections accepted per wake-up: a flood of connects must leave turns for the requests.
constexpr int kAcceptBatch = 16;

// ---- HTTP ---------------------------------------------------------------------------------------

// Where the request head ends (past its empty line) in `in`, looking from `from` on; npos while it
// has not ended. A bare LF ends a line as CRLF does (RFC 9112 2.2 allows a server that).
std::size_t head_end(std::string_view in, std::size_t from) {
  for (auto i = in.find('\n', from); i != std::string_view::npos; i = in.find('\n', i + 1)) {
    if (i + 1 < in.size() && in[i + 1] == '\n') return i + 2;
    if (i + 2 < in.size() && in[i + 1] == '\r' && in[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

bool is_tchar(unsigned char c) {  // RFC 9110 5.6.2
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}
bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

struct Answer {
  int status;
  std::string_view reason;
  std::string_view text;  // the body of an error answer
};

constexpr Answer kOk{200, "OK", ""};
constexpr Answer kBadRequest{400, "Bad Request", "not an HTTP/1.x request\n"};
constexpr Answer kNotFound{404, "Not Found", "this endpoint serves /metrics only\n"};
constexpr Answer kMethod{405, "Method Not Allowed", "this endpoint answers GET only\n"};
constexpr Answer kTimeout{408, "Request Timeout", "the request did not arrive in time\n"};
constexpr Answer kTooLarge{431, "Request Header Fields Too Large", "the request head is over its size limit\n"};
constexpr Answer kBadVersion{505, "HTTP Version Not Supported", "this endpoint speaks HTTP/1.0 and HTTP/1.1\n"};
constexpr Answer kInternal{500, "Internal Server Error", "the metrics could not be serialised\n"};

// What a complete request head asks for, judged on its form alone: every byte is a stranger's.
Answer judge(std::string_view head) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < head.size();) {
    auto nl = head.find('\n', start);
    auto line = head.substr(start, nl - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    start = nl + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) return kBadRequest;
  // The request line: METHOD SP TARGET SP HTTP/1.x, single spaces.
  const auto request = lines.front();
  const auto sp1 = request.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : request.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || request.find(' ', sp2 + 1) != std::string_view::npos) return kBadRequest;
  const auto method = request.substr(0, sp1), target = request.substr(sp1 + 1, sp2 - sp1 - 1),
             version = request.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || target.front() != '/' ||
      !std::all_of(target.begin(), target.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f; }))
    return kBadRequest;
  if (version.size() != 8 || !version.starts_with("HTTP/") || !std::isdigit(static_cast<unsigned char>(version[5])) ||
      version[6] != '.' || !std::isdigit(static_cast<unsigned char>(version[7])))
    return kBadRequest;
  if (version[5] != '1') return kBadVersion;
  // Headers are not used, but a head with a line that is no header is no HTTP.
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto colon = lines[i].find(':');
    if (colon == std::string_view::npos || !is_token(lines[i].substr(0, colon)) ||
        !std::all_of(lines[i].begin() + static_cast<std::ptrdiff_t>(colon), lines[i].end(),
                     [](unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }))
      return kBadRequest;
  }
  if (method != "GET") return kMethod;
  if (target.substr(0, target.find('?')) != "/metrics") return kNotFound;
  return kOk;
}

std::string response(const Answer& a, std::string_view body, std::string_view content_type) {
  std::string out = "HTTP/1.1 " + std::to_string(a.status) + " " + std::string(a.reason) +
                    "\r\nContent-Type: " + std::string(content_type) +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  if (a.status == kMethod.status) out += "Allow: GET\r\n";
  out += "\r\n";
  out += body;
  return out;
}

// ---- connections --------------------------------------------------------------------------------

class Connection;

// What a connection is doing, in the order of its claim to stay when the table is full.
enum class Phase { closing, reading, writing };

// The listener and every open connection; touched only by the endpoint's thread (and by the
// destructor once that thread is joined).
struct Server {
  Server(MetricsEndpoint::Body b, EndpointLimits l) : body(std::move(b)), limits(l) {}

  void wait_for_clients();
  void accept_ready();
  void admit(int fd);
  void make_room();
  void back_off(int error);
  std::string serve(const Answer& a);

  asio::io_context io;  // first: destroyed last, after everything that uses it
  tcp::acceptor acceptor{io};
  asio::steady_timer backoff_timer{io};
  std::chrono::milliseconds backoff{0};  // 0: accepting normally
  MetricsEndpoint::Body body;
  EndpointLimits limits;
  std::list<std::shared_ptr<Connection>> open;  // in the order accepted: the front is the oldest
  LogBudget eviction_log{1};
  LogBudget error_log{1};
  int port = 0;
  std::thread thread;
};

// One request: reads its head, answers, and closes, each step under a deadline of its own (one
// timer, since one applies at a time).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Server& server)
      : socket_(std::move(socket)), server_(server), timer_(server.io), accepted_(Clock::now()) {}

  void start(std::list<std::shared_ptr<Connection>>::iterator where) {
    where_ = where;
    // From the connect on, however the bytes trickle in.
    arm(accepted_ + server_.limits.head_timeout, [](Connection& c) { c.answer(kTimeout); });
    read_more();
  }

  Phase phase() const { return phase_; }

  // Closes the connection and leaves the table; a second call does nothing.
  void close() {
    if (closed_) return;
    closed_ = true;
    auto keep = shared_from_this();  // the table may hold the last reference
    asio::error_code ignored;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    server_.open.erase(where_);
  }

 private:
  void read_more() {
    socket_.async_read_some(asio::buffer(chunk_), [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
      self->on_bytes(ec, n);
    });
  }

  void on_bytes(const asio::error_code& ec, std::size_t n) {
    if (closed_ || phase_ != Phase::reading) return;
    if (ec) return close();  // gone before its request was whole: nobody to answer
    const auto looked = in_.size();
    in_.append(chunk_.data(), n);
    const auto end = head_end(in_, looked < 2 ? 0 : looked - 2);
    if (end != std::string::npos && end <= server_.limits.max_head_bytes) return answer(judge(std::string_view(in_).substr(0, end)));
    if (end != std::string::npos || in_.size() > server_.limits.max_head_bytes) return answer(kTooLarge);
    read_more();
  }

  void answer(const Answer& a) {
    phase_ = Phase::writing;
    asio::error_code ignored;
    socket_.cancel(ignored);  // a read still waiting (the head's deadline passed) ends here
    in_.clear();
    in_.shrink_to_fit();
    out_ = server_.serve(a);
    // A client that does not take its reply holds a slot and the buffer: not for long.
    arm(Clock::now() + server_.limits.write_timeout, [](Connection& c) { c.close(); });
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
      if (ec) return self->close();
      self->linger();
    });
  }

  // The reply is out: say so (FIN), and drop what the client still sends until it closes too.
  void linger() {
    if (closed_) return;
    phase_ = Phase::closing;
    out_.clear();
    out_.shrink_to_fit();
    asio::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    arm(Clock::now() + kLinger, [](Connection& c) { c.close(); });
    drain();
  }

  void drain() {
    socket_.async_read_some(asio::buffer(chunk_), [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
      if (self->closed_) return;
      self->drained_ += n;
      if (ec || self->drained_ > kLingerBytes) return self->close();
      self->drain();
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

  tcp::socket socket_;
  Server& server_;
  asio::steady_timer timer_;
  const Clock::time_point accepted_;
  std::list<std::shared_ptr<Connection>>::iterator where_;
  std::uint64_t timer_generation_ = 0;
  Phase phase_ = Phase::reading;
  std::array<char, 4096> chunk_{};
  std::string in_;   // the request head so far
  std::string out_;  // the reply being written
  std::size_t drained_ = 0;
  bool closed_ = false;
};

// The reply to a request judged `a`: the metrics for a good one.
std::string Server::serve(const Answer& a) {
  if (a.status != kOk.status) return response(a, a.text, "text/plain; charset=utf-8");
  try {
    return response(a, body(), "text/plain; version=0.0.4; charset=utf-8");
  } catch (const std::exception& e) {
    if (error_log.allow()) spdlog::error("metrics: serialising the metrics for a scrape failed: {}", e.what());
    return response(kInternal, kInternal.text, "text/plain; charset=utf-8");
  }
}

void Server::wait_for_clients() {
  acceptor.async_wait(tcp::acceptor::wait_read, [this](const asio::error_code& ec) {
    if (ec) return;  // closed
    accept_ready();
  });
}

// A bounded batch per wake-up (runtime/accept_batch.hpp).
void Server::accept_ready() {
  const auto taken = accept_batch(acceptor.native_handle(), kAcceptBatch, [this](int fd) { admit(fd); });
  if (taken.stop == AcceptBatch::Stop::failed) return back_off(taken.error);
  if (taken.stop == AcceptBatch::Stop::drained) backoff = std::chrono::milliseconds(0);
  wait_for_clients();
}

void Server::admit(int fd) {
  if (open.size() >= limits.max_connections) make_room();
  tcp::socket socket(io);
  asio::error_code ec;
  socket.assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  auto c = std::make_shared<Connection>(std::move(socket), *this);
  open.push_back(c);
  c->start(std::prev(open.end()));
}

// Every slot is taken and a new connection waits: the open one with least claim to its slot goes.
void Server::make_room() {
  if (open.empty()) return;
  auto pick = [this](Phase p) {
    return std::find_if(open.begin(), open.end(), [p](const auto& c) { return c->phase() == p; });
  };
  auto victim = pick(Phase::closing);
  if (victim == open.end()) victim = pick(Phase::reading);
  if (victim == open.end()) victim = open.begin();
  if ((*victim)->phase() != Phase::closing && eviction_log.allow()) {
    const auto more = eviction_log.take_suppressed();
    spdlog::warn("metrics: all {} connections of the endpoint are open: closed the oldest one {} to take a new one{}",
                 limits.max_connections,
                 (*victim)->phase() == Phase::reading ? "still sending its request" : "still taking its reply",
                 more ? " (and " + std::to_string(more) + " more since the last such line)" : std::string());
  }
  (*victim)->close();
}

// Out of descriptors (EMFILE, ENFILE) or kernel memory: accepting again at once would fail again
// and spin. Wait 100 ms, doubling to 1 s, and say so once per episode.
void Server::back_off(int error) {
  if (backoff.count() == 0) {
    spdlog::error("metrics: accept: {}; retrying every 100 ms to 1 s until it succeeds", std::strerror(error));
    backoff = std::chrono::milliseconds(100);
  } else {
    backoff = std::min(2 * backoff, std::chrono::milliseconds(1000));
  }
  backoff_timer.expires_after(backoff);
  backoff_timer.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    accept_ready();
  });
}

std::string errno_words(const char* step) { return std::string(step) + ": " + std::strerror(errno); }

}  // namespace metrics_endpoint_detail

struct MetricsEndpoint::Impl : metrics_endpoint_detail::Server {
  using Server::Server;
};

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::expected<std::unique_ptr<MetricsEndpoint>, std::string> MetricsEndpoint::open(const sockaddr_in& address, Body body,
                                                                                    EndpointLimits limits) {
  auto impl = std::make_unique<Impl>(std::move(body), limits);
  // Opened here rather than by asio, which creates sockets without SOCK_CLOEXEC: no child started
  // by another thread can inherit the listener.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::unexpected(metrics_endpoint_detail::errno_words("socket"));
  const int on = 1;
  // A restarted healthd binds its port again at once, whatever connections of the last one linger.
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in bound = address;
  socklen_t length = sizeof bound;
  const char* failed = nullptr;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    failed = "bind";
  else if (::listen(fd, SOMAXCONN) != 0)
    failed = "listen";
  else if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0)
    failed = "getsockname";
  if (failed != nullptr) {
    auto error = metrics_endpoint_detail::errno_words(failed);
    ::close(fd);
    return std::unexpected(std::move(error));
  }
  impl->port = ntohs(bound.sin_port);
  asio::error_code ec;
  impl->acceptor.assign(asio::ip::tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return std::unexpected("listen: " + ec.message());
  }
  impl->wait_for_clients();
  auto* server = impl.get();
  impl->thread = std::thread([server] {
    // A handler that throws (no memory) costs that connection, not the endpoint.
    for (;;) {
      try {
        server->io.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("metrics: the endpoint's loop: {}", e.what());
      }
    }
  });
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(impl)));
}

MetricsEndpoint::~MetricsEndpoint() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // The thread is gone: what it owned is closed here; its pending handlers go with the io_context.
  asio::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->backoff_timer.cancel();
  while (!impl_->open.empty()) impl_->open.front()->close();
}

int MetricsEndpoint::port() const { return impl_->port; }

}  // namespace ar::healthd
