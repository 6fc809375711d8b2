// Notifications to an admin's webhook ([notify]): a JSON POST per notice the admin subscribed to,
// with a Slack-compatible "text" field, sent by a thread of its own through libcurl. A bounded
// queue (the oldest dropped past queue_size, counted), a timeout per POST, retries with exponential
// backoff up to `attempts`: a dead endpoint costs a log line per backoff step and nothing else; it
// never blocks the engine, the event loop or a check.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/telemetry_config.hpp"
#include "vocabulary/notice.hpp"

namespace ar::healthd {

class Webhook final : public NoticeSink {
 public:
  // Reads webhook_url_file if set (a regular file owned by root or healthd's user, not readable or
  // writable by group or others, one URL). Null when [notify] names no webhook.
  static std::expected<std::unique_ptr<Webhook>, std::string> create(const NotifyConfig& config, std::string node);
  ~Webhook() override;  // stop()
  Webhook(const Webhook&) = delete;
  Webhook& operator=(const Webhook&) = delete;

  // Queues `n` if its kind is subscribed to; never blocks (a mutex held only to push).
  void notify(const Notice& n) noexcept override;
  // Stops the sender: what is in flight is given at most its timeout; what is queued is dropped
  // (logged with a count).
  void stop();

  // Each delivery outcome ("sent", "failed", "dropped", "retry"), on the sender's thread (metrics);
  // the drops stop() makes are reported on the thread that calls stop(), once the sender has ended.
  void on_outcome(std::function<void(std::string_view)> observer);

  struct Stats {
    std::uint64_t sent = 0, failed = 0, dropped = 0, retries = 0;
  };
  Stats stats() const;

  // The body POSTed for `n` (`user`: the job owner's name, empty when unknown).
  static nlohmann::json body(const Notice& n, const std::string& user);

 private:
  Webhook(NotifyConfig config, std::string url, std::string node);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ar::healthd
