// [metrics] and [notify]: how healthd is watched from outside the node. Both are off by default: a
// daemon that opens a port or calls a URL only does so because the admin said where.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "vocabulary/notice.hpp"

namespace ar::healthd {

struct MetricsConfig {
  // Where the Prometheus endpoint (/metrics) listens: "IPV4:PORT" or "localhost:PORT" ("127.0.0.1:9464",
  // "0.0.0.0:9464" for every address; the endpoint has no IPv6). Empty: no endpoint.
  std::string listen;
  // A node_exporter textfile-collector file (e.g. /var/lib/prometheus/node-exporter/healthd.prom),
  // rewritten atomically every textfile_interval. Empty: none.
  std::filesystem::path textfile;
  std::chrono::seconds textfile_interval{15};
};

struct NotifyConfig {
  // Where notices are POSTed as JSON (with a Slack-compatible "text"). Empty: no webhook. The URL of a
  // Slack or Teams hook is a secret: webhook_url_file names a file (root's, not readable by others)
  // holding it instead. At most one of the two is set.
  std::string webhook_url;
  std::filesystem::path webhook_url_file;
  // The notices sent; the others are only counted and logged.
  std::vector<NoticeKind> on = {NoticeKind::drain, NoticeKind::requeue, NoticeKind::resume_cap,
                                NoticeKind::node_returned, NoticeKind::action_failing, NoticeKind::admin,
                                NoticeKind::cure, NoticeKind::straggler};
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};  // one POST, connect included
  std::uint32_t attempts = 5;                                  // per notice, with backoff between them
  std::chrono::seconds max_backoff{300};                       // the longest wait between two tries
  std::uint32_t queue_size = 256;                              // notices waiting; past it the oldest is dropped (counted)
  // An action failing this many tries in a row raises an action_failing notice (once per action).
  std::uint32_t action_failing_after = 3;
};

}  // namespace ar::healthd
