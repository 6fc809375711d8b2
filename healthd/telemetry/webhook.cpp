// The webhook's queue and its sender thread. notify() only copies a notice into the queue under a
// mutex; everything slow (the user name lookup, the POST, the backoff) happens on the sender, which
// takes one notice at a time and tries it up to `attempts` times before the next. stop() wakes a
// backoff wait at once and waits only for a POST in flight, which curl's timeout bounds.
#include "telemetry/webhook.hpp"

#include <atomic>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <curl/curl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <spdlog/spdlog.h>

#include "runtime/backoff.hpp"
#include "telemetry/webhook_url.hpp"
#include "text/text.hpp"
#include "version.hpp"

namespace ar::healthd {
namespace {

constexpr std::size_t kMaxReplyKept = 256;  // of an endpoint's reply, for the log line of a refusal

void curl_global_once() {
  // libcurl wants this once per process before any thread uses it; the IMDS client does the same
  // (collectors/imds_client.cpp), and curl_global_init counts its callers, so both may.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct PostResult {
  long status = 0;            // the HTTP status; 0 when no answer came (error says why)
  std::string error;          // curl's error
  std::string reply;          // the start of the reply's body
  std::chrono::seconds retry_after{0};  // a 429's or 503's Retry-After
  bool sent() const { return error.empty() && status >= 200 && status < 300; }
  // A 4xx says the request itself is refused: trying it again changes nothing. 408 (request timeout)
  // and 429 (too many requests) are the endpoint's state, not the request's.
  bool worth_retrying() const { return !(status >= 400 && status < 500 && status != 408 && status != 429); }
  std::string describe() const {
    if (!error.empty()) return error;
    return reply.empty() ? fmt::format("HTTP {}", status) : fmt::format("HTTP {}: {}", status, reply);
  }
};

std::size_t keep_reply_start(char* data, std::size_t size, std::size_t n, void* user) {
  auto* reply = static_cast<std::string*>(user);
  const std::size_t bytes = size * n;
  if (reply->size() < kMaxReplyKept) reply->append(data, std::min(bytes, kMaxReplyKept - reply->size()));
  return bytes;  // the rest is read and dropped; curl's timeout bounds an endless reply
}

// curl's progress callback, called at least once a second during a transfer: non-zero aborts it.
int abort_when_stopping(void* stopping, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(stopping)->load() ? 1 : 0;
}

// `stopping`: set by stop(), so a POST to a hung endpoint does not hold the daemon's exit for its
// whole timeout.
PostResult post(const std::string& url, const std::string& body, std::chrono::milliseconds timeout,
                const std::atomic<bool>& stopping) {
  PostResult r;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) {
    r.error = "curl_easy_init failed";
    return r;
  }
  curl_slist* list = nullptr;
  // "Expect:" off: curl would otherwise wait up to a second for "100 Continue" on a body over 1 KiB.
  for (const std::string& h : {std::string("Content-Type: application/json"), std::string("Expect:")})
    list = curl_slist_append(list, h.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(list, &curl_slist_free_all);
  const std::string agent = std::string("healthd/") + kVersion;
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe on a thread of our own
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
  // A redirect could take the notice (and a Slack URL's secret path) anywhere: never followed.
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &keep_reply_start);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.reply);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &abort_when_stopping);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(&stopping));
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    r.error = sanitize(error[0] != '\0' ? error : curl_easy_strerror(rc), 300);
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_off_t retry_after = 0;
  if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0)
    r.retry_after = std::chrono::seconds(retry_after);
  r.reply = sanitize(r.reply, 120);
  return r;
}

// The job owner's name for the body. On the sender thread: a lookup may go to LDAP.
std::string user_name(std::optional<std::uint32_t> uid) {
  if (!uid) return {};
  passwd pw{};
  passwd* found = nullptr;
  std::string buf(16384, '\0');
  if (::getpwuid_r(static_cast<uid_t>(*uid), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return {};
  return pw.pw_name;
}

std::string about(const Notice& n) {
  return n.job_id != 0 ? fmt::format("{} notice (job {})", to_string(n.kind), n.job_id) : fmt::format("{} notice", to_string(n.kind));
}

}  // namespace

struct Webhook::Impl {
  NotifyConfig config;
  std::string url, origin, node;

  mutable std::mutex mutex;  // guards everything below
  std::condition_variable wake;
  std::deque<Notice> queue;
  bool stopping = false;
  std::atomic<bool> abort_transfer{false};  // stop(): the POST in flight is cut short
  std::uint64_t drops_unreported = 0;  // dropped by notify(), not yet logged and observed
  Stats stats;
  std::function<void(std::string_view)> observer;
  std::thread sender;

  void observe(std::string_view outcome, std::uint64_t times = 1) {
    std::function<void(std::string_view)> o;
    {
      std::lock_guard lock(mutex);
      o = observer;
    }
    if (o)
      for (std::uint64_t i = 0; i < times; ++i) o(outcome);
  }

  // The observer first, then the count: whoever sees the count has seen the outcome reported.
  void count(std::string_view outcome, std::uint64_t Stats::*counter) {
    observe(outcome);
    std::lock_guard lock(mutex);
    ++(stats.*counter);
  }

  // Drops counted by notify() are logged here, one line per batch, off the engine thread.
  void report_drops(std::uint64_t drops) {
    if (drops == 0) return;
    spdlog::warn("webhook {}: queue full (queue_size {}): oldest notices dropped: {}", origin, config.queue_size, drops);
    observe("dropped", drops);
  }

  std::chrono::milliseconds backoff(std::uint32_t failed_tries, std::chrono::seconds retry_after, std::minstd_rand& rng) const {
    using namespace std::chrono;
    // 1 s, 2 s, 4 s, ... up to max_backoff, less a random part (runtime/backoff.hpp).
    const auto cap = duration_cast<milliseconds>(config.max_backoff);
    const auto delay = backoff_delay(failed_tries, milliseconds(1000), cap, rng);
    // An endpoint that says when to come back (Slack's 429) is listened to, within max_backoff.
    return std::max(delay, std::min(duration_cast<milliseconds>(retry_after), cap));
  }

  // Waits `delay` unless stop() comes first; false: stopping.
  bool wait_or_stop(std::chrono::milliseconds delay) {
    std::unique_lock lock(mutex);
    return !wake.wait_for(lock, delay, [&] { return stopping; });
  }

  // Tries `n` up to `attempts` times. False: stop() came during a backoff wait (the notice is dropped).
  bool deliver(const Notice& n, std::minstd_rand& rng) {
    const std::string body = Webhook::body(n, user_name(n.uid)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (std::uint32_t attempt = 1;; ++attempt) {
      const PostResult r = post(url, body, config.timeout, abort_transfer);
      if (r.sent()) {
        spdlog::debug("webhook {}: {} sent (try {})", origin, about(n), attempt);
        count("sent", &Stats::sent);
        return true;
      }
      const bool last = attempt >= config.attempts, retry = r.worth_retrying();
      if (last || !retry) {
        spdlog::warn("webhook {}: {}: {} (try {} of {}); {}", origin, about(n), r.describe(), attempt, config.attempts,
                     retry ? "given up" : "refused by the endpoint, not retried");
        count("failed", &Stats::failed);
        return true;
      }
      const auto delay = backoff(attempt, r.retry_after, rng);
      spdlog::warn("webhook {}: {}: {} (try {} of {}); next try in {:.1f} s", origin, about(n), r.describe(), attempt,
                   config.attempts, std::chrono::duration<double>(delay).count());
      count("retry", &Stats::retries);
      if (!wait_or_stop(delay)) return false;
    }
  }

  void run() {
    auto rng = backoff_rng();
    for (;;) {
      Notice n;
      std::uint64_t drops = 0;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) return;
        n = std::move(queue.front());
        queue.pop_front();
        drops = std::exchange(drops_unreported, 0);
      }
      // Nothing thrown here may end the thread (std::terminate would end healthd): a notice that
      // cannot be sent (out of memory building its body) is counted as failed and the next one goes.
      try {
        report_drops(drops);
        if (n.node.empty()) n.node = node;
        if (!deliver(n, rng)) {
          // Cut short by stop(): back at the head of the queue, which stop() drops and counts.
          std::lock_guard lock(mutex);
          queue.push_front(std::move(n));
          return;
        }
      } catch (const std::exception& e) {
        spdlog::error("webhook {}: {}: {}", origin, about(n), e.what());
        count("failed", &Stats::failed);
      }
    }
  }
};

Webhook::Webhook(NotifyConfig config, std::string url, std::string node) : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->origin = webhook_origin(url);
  impl_->url = std::move(url);
  impl_->node = std::move(node);
  impl_->sender = std::thread([impl = impl_.get()] { impl->run(); });
}

std::expected<std::unique_ptr<Webhook>, std::string> Webhook::create(const NotifyConfig& config, std::string node) {
  std::string url;
  if (!config.webhook_url_file.empty()) {
    auto read = read_webhook_url_file(config.webhook_url_file);
    if (!read) return std::unexpected(read.error());
    url = std::move(*read);
  } else if (!config.webhook_url.empty()) {
    auto checked = check_webhook_url(config.webhook_url);
    if (!checked) return std::unexpected("webhook_url " + checked.error());
    url = std::move(*checked);
  } else {
    return std::unique_ptr<Webhook>();
  }
  curl_global_once();
  std::string kinds;
  for (auto k : config.on) kinds += (kinds.empty() ? "" : ", ") + std::string(to_string(k));
  spdlog::info("webhook {}: sends {} notices; tries each at most {} times, {} ms per try", webhook_origin(url),
               kinds.empty() ? "no" : kinds, config.attempts, config.timeout.count());
  return std::unique_ptr<Webhook>(new Webhook(config, std::move(url), std::move(node)));
}

Webhook::~Webhook() { stop(); }

void Webhook::notify(const Notice& n) noexcept {
  if (std::find(impl_->config.on.begin(), impl_->config.on.end(), n.kind) == impl_->config.on.end()) return;
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopping) return;
  try {
    // The oldest goes first: of a burst, the latest notices tell where things stand now.
    while (!impl_->queue.empty() && impl_->queue.size() >= impl_->config.queue_size) {
      impl_->queue.pop_front();
      ++impl_->stats.dropped;
      ++impl_->drops_unreported;
    }
    impl_->queue.push_back(n);
  } catch (...) {  // out of memory: this one is lost, and counted
    ++impl_->stats.dropped;
    ++impl_->drops_unreported;
    return;
  }
  impl_->wake.notify_one();
}

void Webhook::stop() {
  std::uint64_t queued = 0, drops = 0;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping && !impl_->sender.joinable()) return;
    impl_->stopping = true;
  }
  impl_->abort_transfer = true;
  impl_->wake.notify_all();
  if (impl_->sender.joinable()) impl_->sender.join();
  {
    std::lock_guard lock(impl_->mutex);
    queued = impl_->queue.size();
    impl_->queue.clear();
    impl_->stats.dropped += queued;
    drops = std::exchange(impl_->drops_unreported, 0);
  }
  impl_->report_drops(drops);
  if (queued > 0) {
    spdlog::warn("webhook {}: stopped; queued notices dropped: {}", impl_->origin, queued);
    impl_->observe("dropped", queued);
  }
}

void Webhook::on_outcome(std::function<void(std::string_view)> observer) {
  std::lock_guard lock(impl_->mutex);
  impl_->observer = std::move(observer);
}

Webhook::Stats Webhook::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

}  // namespace ar::healthd
