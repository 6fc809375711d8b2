#include "vocabulary/notice.hpp"

namespace ar::healthd {

const char* to_string(NoticeKind k) {
  switch (k) {
    case NoticeKind::incident: return "incident";
    case NoticeKind::drain: return "drain";
    case NoticeKind::requeue: return "requeue";
    case NoticeKind::resumed: return "resumed";
    case NoticeKind::resume_cap: return "resume_cap";
    case NoticeKind::node_returned: return "node_returned";
    case NoticeKind::signal: return "signal";
    case NoticeKind::action_failing: return "action_failing";
    case NoticeKind::admin: return "admin";
    case NoticeKind::cure: return "cure";
    case NoticeKind::straggler: return "straggler";
  }
  return "incident";
}

const std::vector<NoticeKind>& all_notice_kinds() {
  static const std::vector<NoticeKind> kinds = {NoticeKind::incident,   NoticeKind::drain,         NoticeKind::requeue,
                                                NoticeKind::resumed,    NoticeKind::resume_cap,    NoticeKind::node_returned,
                                                NoticeKind::signal,     NoticeKind::action_failing, NoticeKind::admin,
                                                NoticeKind::cure,       NoticeKind::straggler};
  return kinds;
}

std::optional<NoticeKind> notice_kind_from_string(const std::string& name) {
  for (auto k : all_notice_kinds())
    if (name == to_string(k)) return k;
  return std::nullopt;
}

}  // namespace ar::healthd
