// The webhook ([notify]): what it POSTs, how it retries, what a dead endpoint costs, and how the URL
// file is guarded. A small HTTP server on 127.0.0.1 in the test stands in for Slack.
#include "telemetry/webhook.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_capture.hpp"
#include "telemetry/webhook_url.hpp"
#include "temp_dir.hpp"
#include "version.hpp"

namespace ar::healthd {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Request {
  std::string method, path, body;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return "";
  }
};

// One HTTP/1.1 endpoint on 127.0.0.1:<free port>, one connection at a time. Answers the scripted
// responses in order (the last one again once they run out); in blackhole mode it accepts and reads
// and never answers (connections stay open until the server goes).
// One scripted answer. Outside the server class: clang cannot use a nested class's default member
// initializers in a default argument of the enclosing class (the constructor's `= {{}}`).
struct ScriptedReply {
  int status = 200;
  std::string body = "ok";
  std::string extra_headers;  // "Name: value\r\n" lines
};

class LoopbackServer {
 public:
  using Reply = ScriptedReply;

  explicit LoopbackServer(std::vector<Reply> replies = {{}}, bool blackhole = false)
      : replies_(std::move(replies)), blackhole_(blackhole) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listener_, 64), 0);
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    done_ = true;
    thread_.join();
    for (int fd : held_) ::close(fd);
    ::close(listener_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/services/T000/B000/SECRETPATH") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::size_t connections() const { return connections_; }

 private:
  void serve() {
    while (!done_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      if (blackhole_) {
        held_.push_back(fd);  // read nothing, answer nothing: the client waits for its timeout
        continue;
      }
      auto r = read_request(fd);
      if (r) {
        Reply reply;
        {
          std::lock_guard lock(mutex_);
          requests_.push_back(*r);
          reply = replies_[std::min(requests_.size() - 1, replies_.size() - 1)];
        }
        const std::string text = "HTTP/1.1 " + std::to_string(reply.status) + " X\r\nContent-Length: " +
                                 std::to_string(reply.body.size()) + "\r\nConnection: close\r\n" + reply.extra_headers +
                                 "\r\n" + reply.body;
        (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
      }
      ::close(fd);
    }
  }

  static std::optional<Request> read_request(int fd) {
    std::string data;
    std::size_t head_end = std::string::npos, want = 0;
    const auto deadline = Clock::now() + 5s;
    while (Clock::now() < deadline) {
      if (head_end != std::string::npos && data.size() >= head_end + 4 + want) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      data.append(buf, static_cast<std::size_t>(n));
      if (head_end == std::string::npos && (head_end = data.find("\r\n\r\n")) != std::string::npos) {
        std::smatch m;
        const std::string head = data.substr(0, head_end);
        if (std::regex_search(head, m, std::regex("\r\ncontent-length: *([0-9]+)", std::regex::icase))) want = std::stoul(m[1]);
      }
    }
    if (head_end == std::string::npos) return std::nullopt;
    Request r;
    std::istringstream head(data.substr(0, head_end));
    std::string line;
    std::getline(head, line);
    std::istringstream first(line);
    first >> r.method >> r.path;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon), value = line.substr(colon + 1);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers.emplace_back(name, value);
    }
    r.body = data.substr(head_end + 4, want);
    return r;
  }

  std::vector<Reply> replies_;
  bool blackhole_;
  int listener_ = -1, port_ = 0;
  std::atomic<bool> done_{false};
  std::atomic<std::size_t> connections_{0};
  std::vector<int> held_;
  mutable std::mutex mutex_;
  std::vector<Request> requests_;
  std::thread thread_;
};

// Polls `cond` until it holds or 10 s have passed (a deadline for a broken build, not a timing).
template <class F>
bool eventually(F cond) {
  const auto deadline = Clock::now() + 10s;
  while (!cond()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

NotifyConfig fast_config(const std::string& url) {
  NotifyConfig c;
  c.webhook_url = url;
  c.timeout = 200ms;
  c.max_backoff = 1s;
  c.attempts = 5;
  return c;
}

std::unique_ptr<Webhook> make(const NotifyConfig& c) {
  auto w = Webhook::create(c, "n1");
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error());
  return w ? std::move(*w) : nullptr;
}

Notice drain_notice() {
  Notice n;
  n.kind = NoticeKind::drain;
  n.at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1795946645123));  // 2026-11-29T10:04:05.123Z
  n.node = "n1";
  n.job_id = 42;
  n.uid = ::getuid();
  n.attempt = 1;
  n.code = "GPU-XID-79";
  n.message = "healthd: GPU-XID-79: GPU fell off the bus";
  n.action = "reboot";
  return n;
}

std::string my_name() {
  const passwd* pw = ::getpwuid(::getuid());
  return pw != nullptr ? pw->pw_name : "";
}

// Records each outcome the webhook reports.
struct Outcomes {
  std::mutex mutex;
  std::vector<std::string> seen;
  void attach(Webhook& w) {
    w.on_outcome([this](std::string_view o) {
      std::lock_guard lock(mutex);
      seen.emplace_back(o);
    });
  }
  std::vector<std::string> get() {
    std::lock_guard lock(mutex);
    return seen;
  }
};

TEST(Webhook, PostsTheNoticeAsJsonWithItsHeadersAndFields) {
  LoopbackServer server;
  auto w = make(fast_config(server.url()));
  ASSERT_TRUE(w);
  Outcomes outcomes;
  outcomes.attach(*w);
  w->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return w->stats().sent == 1; }));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const auto& r = reqs[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/services/T000/B000/SECRETPATH");
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("user-agent"), std::string("healthd/") + kVersion);
  EXPECT_EQ(r.header("expect"), "");
  auto b = nlohmann::json::parse(r.body);
  EXPECT_EQ(b["node"], "n1");
  EXPECT_EQ(b["kind"], "drain");
  EXPECT_EQ(b["job_id"], 42);
  EXPECT_EQ(b["uid"], ::getuid());
  EXPECT_EQ(b["user"], my_name());  // looked up on the sender thread
  EXPECT_EQ(b["attempt"], 1);
  EXPECT_EQ(b["code"], "GPU-XID-79");
  EXPECT_EQ(b["message"], "healthd: GPU-XID-79: GPU fell off the bus");
  EXPECT_EQ(b["action"], "reboot");
  EXPECT_EQ(b["time"], "2026-11-29T10:04:05.123Z");
  EXPECT_EQ(b["healthd_version"], kVersion);
  EXPECT_EQ(b["text"], ":rotating_light: healthd on n1: drained for a reboot (job 42, " + my_name() +
                           "): healthd: GPU-XID-79: GPU fell off the bus");
  EXPECT_EQ(outcomes.get(), std::vector<std::string>{"sent"});
  const auto s = w->stats();
  EXPECT_EQ(s.failed + s.retries + s.dropped, 0u);
}

TEST(Webhook, BodyOfANoticeAboutNoJobHasNullsWhereNothingIsKnown) {
  Notice n;
  n.kind = NoticeKind::node_returned;
  n.node = "n3";
  n.message = "node n3 passed its checks again: returned to service";
  n.action = "resume";
  auto b = Webhook::body(n, "");
  EXPECT_TRUE(b["job_id"].is_null());
  EXPECT_TRUE(b["user"].is_null());
  EXPECT_TRUE(b["uid"].is_null());
  EXPECT_EQ(b["text"], ":white_check_mark: healthd on n3: node returned to service: node n3 passed its checks again: returned to service");
}

TEST(Webhook, TextOfAJobNoticeNamesTheJobAndItsOwnerAndTheCodeOnce) {
  Notice n = drain_notice();
  n.kind = NoticeKind::requeue;
  n.message = "job 42 requeued (attempt 2) after GPU-XID-79 on n1";
  EXPECT_EQ(Webhook::body(n, "alice")["text"], ":repeat: healthd on n1: job 42 (alice) requeued: job 42 requeued (attempt 2) after GPU-XID-79 on n1");
  n.kind = NoticeKind::resume_cap;
  n.message = "the cap of 1 resumes is reached";
  EXPECT_EQ(Webhook::body(n, "")["text"], ":no_entry: healthd on n1: job 42 not resumed: resume cap reached (GPU-XID-79): the cap of 1 resumes is reached");
}

TEST(Webhook, RetriesWithBackoffUntilTheEndpointTakesIt) {
  ar::test::LogCapture log;
  LoopbackServer server({{500, "oops"}, {500, "oops"}, {200, "ok"}});
  auto w = make(fast_config(server.url()));
  ASSERT_TRUE(w);
  Outcomes outcomes;
  outcomes.attach(*w);
  w->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return w->stats().sent == 1; }));
  w->stop();
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);  // delivered once, after two refusals
  EXPECT_EQ(reqs[0].body, reqs[2].body);
  EXPECT_EQ(w->stats().retries, 2u);
  EXPECT_EQ(w->stats().failed, 0u);
  EXPECT_EQ(outcomes.get(), (std::vector<std::string>{"retry", "retry", "sent"}));
  // One warning per failed try, naming the endpoint by scheme and host only: the path is the secret.
  EXPECT_EQ(log.count("[warning] webhook http://127.0.0.1:" + std::to_string(server.port()) +
                      ": drain notice (job 42): HTTP 500: oops (try "), 2u);
  EXPECT_EQ(log.count("next try in"), 2u);
  EXPECT_EQ(log.count("SECRETPATH"), 0u);
}

TEST(Webhook, TooManyRequestsAndTimeoutAnswersAreRetriedOtherClientErrorsNot) {
  ar::test::LogCapture log;
  {
    LoopbackServer server({{429, "slow down"}, {408, ""}, {204, ""}});
    auto w = make(fast_config(server.url()));
    w->notify(drain_notice());
    ASSERT_TRUE(eventually([&] { return w->stats().sent == 1; }));
    EXPECT_EQ(server.requests().size(), 3u);
  }
  LoopbackServer server({{400, "invalid_payload"}, {200, "ok"}});
  auto w = make(fast_config(server.url()));
  w->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return w->stats().failed == 1; }));
  w->stop();
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(w->stats().retries, 0u);
  EXPECT_EQ(w->stats().sent, 0u);
  EXPECT_EQ(log.count("HTTP 400: invalid_payload (try 1 of 5); refused by the endpoint, not retried"), 1u);
}

TEST(Webhook, GivesUpAfterItsAttemptsWithALinePerTry) {
  ar::test::LogCapture log;
  int port = 0;
  {
    LoopbackServer gone;  // a port that was just free: nothing listens there now
    port = gone.port();
  }
  auto c = fast_config("http://127.0.0.1:" + std::to_string(port) + "/hook");
  c.attempts = 3;
  auto w = make(c);
  Outcomes outcomes;
  outcomes.attach(*w);
  w->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return w->stats().failed == 1; }));
  EXPECT_EQ(w->stats().retries, 2u);
  EXPECT_EQ(outcomes.get(), (std::vector<std::string>{"retry", "retry", "failed"}));
  EXPECT_EQ(log.count("[warning] webhook http://127.0.0.1:" + std::to_string(port) + ": drain notice (job 42): "), 3u);
  EXPECT_EQ(log.count("of 3); next try in"), 2u);
  EXPECT_EQ(log.count("(try 3 of 3); given up"), 1u);
}

TEST(Webhook, NeverFollowsARedirect) {
  LoopbackServer server({{302, "", "Location: /elsewhere\r\n"}});
  auto c = fast_config(server.url());
  c.attempts = 1;
  auto w = make(c);
  w->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return w->stats().failed == 1; }));
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].path, "/services/T000/B000/SECRETPATH");
}

TEST(Webhook, AHungEndpointNeitherDelaysNotifyNorGrowsTheQueueNorHoldsStop) {
  ar::test::LogCapture log;
  LoopbackServer blackhole({}, true);
  auto c = fast_config(blackhole.url());
  c.queue_size = 10;
  c.attempts = 100;
  auto w = make(c);
  const auto n = drain_notice();
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) w->notify(n);
  EXPECT_LT(Clock::now() - t0, 100ms);  // notify only queues: it never waits for the sender
  // At most queue_size wait; the one the sender holds, if it took one yet, is not in the queue.
  const auto dropped = w->stats().dropped;
  EXPECT_GE(dropped, 1000u - 10u - 1u);
  EXPECT_LE(dropped, 1000u - 10u);
  ASSERT_TRUE(eventually([&] { return blackhole.connections() >= 1; }));
  const auto t1 = Clock::now();
  w->stop();  // the POST in flight is given its 200 ms at most
  EXPECT_LT(Clock::now() - t1, 200ms + 1s);
  const auto s = w->stats();
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.dropped, 1000u);  // every notice is accounted for: queued ones dropped at stop
  // Drops are logged by the sender, a line per batch (before it takes a notice, and at stop), not per drop.
  EXPECT_GE(log.count("oldest notices dropped: "), 1u);
  EXPECT_LE(log.count("oldest notices dropped: "), 2u);
  EXPECT_EQ(log.count("stopped; queued notices dropped: "), 1u);
}

TEST(Webhook, StopCutsABackoffWaitShort) {
  // A 429 asking for 30 s: the sender waits that long before its next try, unless stopped.
  LoopbackServer server({{429, "", "Retry-After: 30\r\n"}});
  auto c = fast_config(server.url());
  c.max_backoff = 60s;
  auto w = make(c);
  w->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return w->stats().retries == 1; }));
  const auto t0 = Clock::now();
  w->stop();
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(w->stats().dropped, 1u);  // the one cut short
}

TEST(Webhook, SendsOnlyTheKindsSubscribedTo) {
  LoopbackServer server;
  auto c = fast_config(server.url());
  c.on = {NoticeKind::drain};
  auto w = make(c);
  auto requeue = drain_notice();
  requeue.kind = NoticeKind::requeue;
  w->notify(requeue);  // queued first if it were subscribed: the queue is first in, first out
  w->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return w->stats().sent == 1; }));
  w->stop();
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(server.requests()[0].body)["kind"], "drain");
  EXPECT_EQ(w->stats().dropped, 0u);
}

TEST(Webhook, HostileTextIsEscapedForJsonAndSlackAndBounded) {
  Notice n = drain_notice();
  n.node = "n1<!here>";
  n.code = "GPU-XID-79\x1b[31m";
  n.message = "NVRM: <!channel> <@U0123ABC> <https://evil.example|click> a & b \xff\xfe\x01 \"quoted\" \\ " +
              std::string(100000, '&');
  n.action = "reboot\n";
  const auto b = Webhook::body(n, "mallory<!everyone>");
  std::string wire;
  ASSERT_NO_THROW(wire = b.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict));  // valid UTF-8 throughout
  const auto back = nlohmann::json::parse(wire);
  const std::string text = back["text"];
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_NE(text.find("&lt;!channel&gt;"), std::string::npos);
  EXPECT_NE(text.find("&lt;@U0123ABC&gt;"), std::string::npos);
  EXPECT_NE(text.find("&lt;https://evil.example|click&gt;"), std::string::npos);
  EXPECT_NE(text.find("n1&lt;!here&gt;"), std::string::npos);
  EXPECT_NE(text.find(", mallory&lt;!everyone&gt;)"), std::string::npos);
  EXPECT_NE(text.find(" a &amp; b "), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_LE(text.size(), 2048u);
  EXPECT_LE(back["message"].get<std::string>().size(), 1000u);
  EXPECT_LE(wire.size(), 8192u);
  // JSON keeps what was meant: raw characters, escaped by the encoder, not by hand.
  EXPECT_NE(back["message"].get<std::string>().find("<!channel> <@U0123ABC>"), std::string::npos);
  EXPECT_NE(back["message"].get<std::string>().find("\"quoted\" \\"), std::string::npos);
  EXPECT_EQ(back["action"].get<std::string>().find('\n'), std::string::npos);
}

TEST(Webhook, NoUrlNoWebhookAndABadUrlIsAnError) {
  NotifyConfig none;
  auto w = Webhook::create(none, "n1");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(*w, nullptr);
  for (const std::string bad : {"ftp://example.com/x", "http://", "https://exa mple.com/", "file:///etc/passwd"}) {
    NotifyConfig c;
    c.webhook_url = bad;
    auto r = Webhook::create(c, "n1");
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().rfind("webhook_url ", 0), 0u) << r.error();
  }
}

TEST(Webhook, LogsNamesOnlyTheSchemeAndHostOfTheUrl) {
  EXPECT_EQ(webhook_origin("https://hooks.slack.com/services/T000/B000/XXXX"), "https://hooks.slack.com");
  EXPECT_EQ(webhook_origin("http://user:pass@hooks.example.com:8080/x?token=1#f"), "http://hooks.example.com:8080");
  EXPECT_EQ(webhook_origin("http://[::1]:9/x"), "http://[::1]:9");
}

class WebhookUrlFile : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& text, mode_t mode) {
    auto p = dir_ / name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }
  std::expected<std::unique_ptr<Webhook>, std::string> create_from(const std::filesystem::path& p) {
    NotifyConfig c = fast_config("");
    c.webhook_url_file = p;
    return Webhook::create(c, "n1");
  }
  void expect_refused(const std::filesystem::path& p, const std::string& why) {
    auto r = create_from(p);
    ASSERT_FALSE(r.has_value()) << p;
    EXPECT_NE(r.error().find("webhook_url_file " + p.string() + ": "), std::string::npos) << r.error();
    EXPECT_NE(r.error().find(why), std::string::npos) << r.error();
  }
  ar::test::TempDir dir_;
};

TEST_F(WebhookUrlFile, APrivateFileWithOneUrlIsReadAndUsed) {
  LoopbackServer server;
  auto w = create_from(write("hook", server.url() + "\n", 0600));
  ASSERT_TRUE(w.has_value()) << w.error();
  ASSERT_NE(*w, nullptr);
  (*w)->notify(drain_notice());
  ASSERT_TRUE(eventually([&] { return (*w)->stats().sent == 1; }));
  EXPECT_EQ(server.requests().at(0).path, "/services/T000/B000/SECRETPATH");
  auto ro = create_from(write("hook-ro", server.url(), 0400));
  EXPECT_TRUE(ro.has_value()) << ro.error();
}

TEST_F(WebhookUrlFile, AnythingButAPrivateRegularFileWithOneHttpUrlIsRefusedNamingTheFile) {
  const std::string url = "https://hooks.slack.com/services/T/B/X";
  expect_refused(write("group-readable", url, 0640), "mode 0640");
  expect_refused(write("world-readable", url, 0644), "not be readable or writable by group or others");
  expect_refused(write("group-writable", url, 0620), "mode 0620");
  expect_refused(write("two-lines", url + "\n" + url + "\n", 0600), "more than one line");
  expect_refused(write("empty", "", 0600), "is empty");
  expect_refused(write("ftp", "ftp://example.com/x\n", 0600), "http:// or https://");
  expect_refused(write("big", std::string(5000, 'a'), 0600), "at most 4096 bytes");
  expect_refused(dir_ / "missing", "No such file");
  std::filesystem::create_directory(dir_ / "a-dir");
  ::chmod((dir_ / "a-dir").c_str(), 0700);
  expect_refused(dir_ / "a-dir", "not a regular file");
  const auto target = write("target", url, 0600);
  std::filesystem::create_symlink(target, dir_ / "link");
  expect_refused(dir_ / "link", "symbolic link");
  if (::geteuid() == 0) {  // only root can give a file away
    const auto theirs = write("theirs", url, 0600);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    expect_refused(theirs, "owned by uid 65534");
  }
}

}  // namespace
}  // namespace ar::healthd
