// A notify_only entry carried out: the admins are told of a fault whose action keeps the node in
// service (an incident notice: the webhook, the event log, the metrics), and nothing is done on Slurm.
// At least once: a daemon killed between the notice and the journal's save tells it again.
#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<Carried, std::string> carry_out_notify(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  spdlog::warn("node {}: {}: {} (notify_only: the node stays in service)", services.node, e.code, e.reason);
  if (services.notices != nullptr) {
    Notice n;
    n.kind = NoticeKind::incident;
    n.at = now;
    n.node = e.node.empty() ? services.node : e.node;
    n.code = e.code;
    n.message = sanitize(e.reason, 1000);
    n.action = to_string(Action::notify_only);
    services.notices->notify(n);
  }
  return Carried{.finished = true, .acted = Action::notify_only};
}

}  // namespace ar::healthd
