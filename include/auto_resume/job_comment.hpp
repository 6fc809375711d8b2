// The line healthd writes into a job's admin comment (AdminComment=, never the user's Comment=) when
// it requeues the job, and the plugin reads back in the restarted job to tell the training code why
// the last attempt ended. One definition for both sides.
//   auto-resume: attempt 1 ended: GPU-XID-79 on n2: NVRM: Xid (PCI:0000:17:00): 79, ...
// The admin comment may hold other lines (an admin's, another tool's): healthd replaces its own line
// only, and keeps the others as they are.
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

inline constexpr const char* kCommentPrefix = "auto-resume: ";

// `existing` with its auto-resume line (if any) replaced by `ours` (made one line), other lines kept.
inline std::string merge_admin_comment(const std::string& existing, std::string ours) {
  for (auto& ch : ours)
    if (ch == '\n' || ch == '\r') ch = ' ';
  std::string out;
  std::size_t pos = 0;
  while (pos < existing.size()) {
    std::size_t end = existing.find('\n', pos);
    if (end == std::string::npos) end = existing.size();
    std::string line = existing.substr(pos, end - pos);
    if (!line.empty() && line.rfind(kCommentPrefix, 0) != 0) out += line + "\n";
    pos = end + 1;
  }
  return out + ours;
}

// The auto-resume line of an admin comment, or empty.
inline std::string auto_resume_line(const std::string& admin_comment) {
  std::size_t pos = 0;
  while (pos < admin_comment.size()) {
    std::size_t end = admin_comment.find('\n', pos);
    if (end == std::string::npos) end = admin_comment.size();
    if (admin_comment.compare(pos, std::char_traits<char>::length(kCommentPrefix), kCommentPrefix) == 0)
      return admin_comment.substr(pos, end - pos);
    pos = end + 1;
  }
  return {};
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
