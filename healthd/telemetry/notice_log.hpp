// One log line per decision, whatever else logged it on the way: "decision: requeue node n1 job 42
// code GPU-XID-79 action requeue: ...", so `journalctl -u healthd -g decision:` (or a log shipper)
// finds every drain, requeue, resume and admin action of a node in one form. Warnings for what takes
// a node or a job out, info for what brings them back. An incident is logged by the responder that
// finds it ("node n1 is faulty: CODE: message (action drain)"), not again here.
#pragma once

#include "vocabulary/notice.hpp"

namespace ar::healthd {

class NoticeLog final : public NoticeSink {
 public:
  void notify(const Notice& n) noexcept override;
};

}  // namespace ar::healthd
