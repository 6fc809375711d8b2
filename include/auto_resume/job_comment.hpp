// The job comment healthd writes when it requeues a job, and the plugin reads back in the restarted
// job to tell the training code why the last attempt ended. One definition for both sides.
//   auto-resume: attempt 1 ended: GPU-XID-79 on n2: NVRM: Xid (PCI:0000:17:00): 79, ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ar {

struct AttemptEnd {
  std::uint32_t attempt = 0;  // the attempt that ended (1 = the first run)
  std::string code;           // fault code, e.g. GPU-XID-79
  std::string node;           // the node that found it
  std::string message;
};

inline constexpr std::size_t kMaxCommentBytes = 240;

inline std::string format_attempt_comment(const AttemptEnd& e) {
  std::string c = "auto-resume: attempt " + std::to_string(e.attempt) + " ended: " + e.code + " on " + e.node + ": " +
                  e.message;
  if (c.size() > kMaxCommentBytes) c = c.substr(0, kMaxCommentBytes - 3) + "...";
  return c;
}

inline std::optional<AttemptEnd> parse_attempt_comment(const std::string& c) {
  const std::string head = "auto-resume: attempt ";
  if (c.rfind(head, 0) != 0) return std::nullopt;
  std::size_t pos = head.size();
  std::size_t end = c.find(" ended: ", pos);
  if (end == std::string::npos) return std::nullopt;
  AttemptEnd e;
  try {
    e.attempt = static_cast<std::uint32_t>(std::stoul(c.substr(pos, end - pos)));
  } catch (...) {
    return std::nullopt;
  }
  pos = end + 8;
  std::size_t on = c.find(" on ", pos);
  if (on == std::string::npos) return std::nullopt;
  e.code = c.substr(pos, on - pos);
  pos = on + 4;
  std::size_t colon = c.find(": ", pos);
  e.node = c.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
  if (colon != std::string::npos) e.message = c.substr(colon + 2);
  if (e.code.empty() || e.node.empty()) return std::nullopt;
  return e;
}

}  // namespace ar
