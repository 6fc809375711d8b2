#include "telemetry/notice_log.hpp"

#include <spdlog/spdlog.h>

namespace ar::healthd {

void NoticeLog::notify(const Notice& n) noexcept {
  // An incident is said where it is decided, in the same shape ("node n1 is faulty: CODE: ... (action
  // drain)"), before anything is done about it.
  if (n.kind == NoticeKind::incident) return;
  const bool bad_news = n.kind != NoticeKind::resumed && n.kind != NoticeKind::node_returned && n.kind != NoticeKind::signal;
  try {
    spdlog::log(bad_news ? spdlog::level::warn : spdlog::level::info, "decision: {} node {} job {}{} code {} action {}: {}",
                to_string(n.kind), n.node, n.job_id == 0 ? std::string("-") : std::to_string(n.job_id),
                n.uid ? " uid " + std::to_string(*n.uid) : std::string(), n.code.empty() ? "-" : n.code,
                n.action.empty() ? "-" : n.action, n.message);
  } catch (...) {
    // A log line that cannot be formatted is not worth a decision.
  }
}

}  // namespace ar::healthd
