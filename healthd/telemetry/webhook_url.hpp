// The webhook's URL: where it may point, where it is read from, and what of it may be logged.
//
// The URL of a Slack or Teams incoming webhook is its own credential (anyone holding it may post to
// the channel), so only its scheme and host ever reach a log line, and the file that holds it must be
// as private as a key: a regular file (no symlink), owned by root or the daemon's user, neither
// readable nor writable by group or others, at most 4 KiB, one line.
#pragma once

#include <expected>
#include <filesystem>
#include <string>

namespace ar::healthd {

inline constexpr std::size_t kMaxWebhookUrlFile = 4096;

// `url` if it is an http:// or https:// URL with a host and no space, control or non-ASCII byte
// (nothing that could split a header or a log line); else why not.
std::expected<std::string, std::string> check_webhook_url(const std::string& url);

// The URL held in `file` (checked as above, a trailing newline allowed); else an error naming the file.
std::expected<std::string, std::string> read_webhook_url_file(const std::filesystem::path& file);

// What a log line may say of `url`: "https://hooks.slack.com" (scheme, host and a port if given; no
// user, path or query, which is where a hook's secret lives).
std::string webhook_origin(const std::string& url);

}  // namespace ar::healthd
