// Webhook::body: the JSON document POSTed for one notice, with its one-line Slack-compatible "text".
//
// Every string in it may carry bytes from outside (a kernel-log line, a Slurm field, a user name), so
// each is sanitized and bounded here, whatever the caller did: the document is always valid JSON of a
// bounded size, and "text" cannot ping a channel (<!channel>, <@U123>) or forge a link, because
// Slack's three control characters are escaped in it as Slack asks (&amp; &lt; &gt;).
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "telemetry/webhook.hpp"
#include "text/text.hpp"
#include "version.hpp"

namespace ar::healthd {
namespace {

// Field limits in bytes. A drain reason is at most ~1000 bytes already; a Slack line reads best short.
constexpr std::size_t kMaxMessage = 1000, kMaxCode = 64, kMaxName = 128, kMaxAction = 32, kMaxTextMessage = 300;

// Slack's escaping for message text (api.slack.com/reference/surfaces/formatting#escaping): only
// these three are control characters; everything else shows as written.
std::string slack_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

// RFC 3339 in UTC with milliseconds: 2026-11-29T10:04:05.123Z.
std::string rfc3339_ms(std::chrono::system_clock::time_point at) {
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(at.time_since_epoch());
  const auto secs = floor<seconds>(ms);
  const std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  if (std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm) == 0) return "1970-01-01T00:00:00.000Z";
  return fmt::format("{}.{:03d}Z", stamp, static_cast<int>((ms - secs).count()));
}

// The emoji and the words that open the line, by kind.
std::pair<const char*, std::string> headline(const Notice& n) {
  switch (n.kind) {
    case NoticeKind::incident: return {":warning:", "fault seen"};
    case NoticeKind::drain: return {":rotating_light:", n.action == "reboot" ? "drained for a reboot" : "drained"};
    case NoticeKind::requeue: return {":repeat:", "requeued"};
    case NoticeKind::resumed: return {":arrow_forward:", "running again"};
    case NoticeKind::resume_cap: return {":no_entry:", "not resumed: resume cap reached"};
    case NoticeKind::node_returned: return {":white_check_mark:", "node returned to service"};
    case NoticeKind::signal: return {":bell:", "signalled to checkpoint"};
    case NoticeKind::action_failing: return {":x:", "action failing repeatedly"};
    case NoticeKind::admin: return {":information_source:", "admin action"};
    case NoticeKind::cure: return {":wrench:", n.action == "replace" ? "replacement requested" : "cure step"};
    case NoticeKind::straggler: return {":turtle:", "straggler"};
  }
  return {":grey_question:", "notice"};
}

bool about_the_job(NoticeKind k) {
  return k == NoticeKind::requeue || k == NoticeKind::resumed || k == NoticeKind::resume_cap || k == NoticeKind::signal;
}

// One line, read in a channel at a glance: who, what, why.
//   ":repeat: healthd on n1: job 42 (alice) requeued: job 42 requeued (attempt 2) after GPU-XID-79 on n1"
//   ":rotating_light: healthd on n1: drained for a reboot: healthd: GPU-XID-79: ..."
// The code is added only where the message does not say it already.
std::string slack_text(const Notice& n, const std::string& node, const std::string& code, const std::string& user) {
  const auto [emoji, what] = headline(n);
  const std::string owner = user.empty() ? std::string() : slack_escape(user);
  std::string line = fmt::format("{} healthd on {}: ", emoji, slack_escape(node));
  if (n.job_id != 0 && about_the_job(n.kind))
    line += fmt::format("job {}{} {}", n.job_id, owner.empty() ? "" : " (" + owner + ")", what);
  else if (n.job_id != 0)
    line += fmt::format("{} (job {}{})", what, n.job_id, owner.empty() ? "" : ", " + owner);
  else
    line += what;
  const std::string message = sanitize(n.message, kMaxTextMessage);
  if (!code.empty() && message.find(code) == std::string::npos) line += " (" + slack_escape(code) + ")";
  if (!message.empty()) line += ": " + slack_escape(message);
  return line;
}

}  // namespace

nlohmann::json Webhook::body(const Notice& n, const std::string& user) {
  const std::string node = sanitize(n.node, kMaxName), code = sanitize(n.code, kMaxCode), who = sanitize(user, kMaxName);
  nlohmann::json b = {
      {"node", node},
      {"kind", to_string(n.kind)},
      {"job_id", n.job_id != 0 ? nlohmann::json(n.job_id) : nlohmann::json(nullptr)},
      {"user", who.empty() ? nlohmann::json(nullptr) : nlohmann::json(who)},
      {"uid", n.uid ? nlohmann::json(*n.uid) : nlohmann::json(nullptr)},
      {"attempt", n.attempt},
      {"code", code},
      {"message", sanitize(n.message, kMaxMessage)},
      {"action", sanitize(n.action, kMaxAction)},
      {"time", rfc3339_ms(n.at)},
      {"text", slack_text(n, node, code, who)},
      {"healthd_version", kVersion},
  };
  return b;
}

}  // namespace ar::healthd
