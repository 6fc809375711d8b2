// A cure chain's last step carried out: new hardware asked for (the replace hooks), the node drained
// for good with "(replacement requested)", or held for an admin where no hook would ask.
#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<Carried, std::string> carry_out_replace(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  auto info = services.slurm.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  auto& journal = services.journal;
  // No replace hook: nothing would ask for the new hardware. The node is held for an admin, its
  // reason saying so, instead of "replacement requested" that no one acts on.
  const auto missing = replace_cannot_run(services.policy.hooks);
  const auto& own_before = journal.own_drain();
  const std::string reason =
      missing ? reason_needing(own_before ? own_before->reason : e.reason, missing->needs) : e.reason;
  // A reboot still finishing (healthd runs again before slurmd has registered): slurmd registering
  // may still change the node's state and reason. Wait for it, 10 minutes at most.
  if (info->reboot_pending() && now - e.created < std::chrono::minutes(10)) {
    journal.wait_until(e.id, now + std::chrono::seconds(2), "waiting for the node's reboot to finish");
    return Carried{.finished = false};
  }
  if (info->drained_or_draining() && !info->reason.starts_with(kReasonPrefix)) {
    // Someone else's drain: their reason stays; the replace hooks still run (the cure is theirs to finish).
    spdlog::info("node {} is drained by someone else ({}); replacement requested without changing it", e.node,
                 sanitize(info->reason, 240));
  } else if (info->drained_or_draining()) {
    if (info->reason != reason)
      if (auto r = services.slurm.set_reason(e.node, reason); !r) return std::unexpected(r.error().message);
  } else {
    // Back in service (an admin resumed it): drained again, within the share cap.
    JournalEntry drain = e;
    drain.kind = Action::drain;
    drain.reason = reason;
    drain.reboot = false;
    if (auto r = carry_out_drain(services, drain, now); !r) return r;
    if (!services.memory.withheld.empty()) {
      // Withheld by the share cap (status says so): asked again later, nothing requested meanwhile.
      journal.wait_until(e.id, now + std::chrono::seconds(30), services.memory.withheld);
      return Carried{.finished = false};
    }
  }
  auto& own = journal.own_drain();
  if (!own) own = OwnDrain{e.code, reason, now, true, false, std::nullopt, std::nullopt};
  own->reason = reason;
  own->held = true;  // new hardware: never returned by healthd itself
  if (missing) {
    hold_cannot_run(services, *missing, reason, now);
    return Carried{};  // nothing was requested: no "replacement requested" notice
  }
  if (own->cure) {
    own->cure->phase = CureProgress::Phase::exhausted;
    own->cure->since = now;
    own->cure->last = "replacement requested";
  }
  spdlog::error("node {}: replacement requested: {}", e.node, e.reason);
  return Carried{.acted = Action::replace};
}

}  // namespace ar::healthd
