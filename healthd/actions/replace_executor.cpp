// A cure chain's last step carried out: new hardware asked for (the replace hooks), the node drained
// for good with "(replacement requested)", or held for an admin where no hook would ask.
#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<bool, std::string> SlurmActions::do_replace(const JournalEntry& e, WallTime now) {
  auto info = slurm_.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  // No replace hook: nothing would ask for the new hardware. The node is held for an admin, its
  // reason saying so, instead of "replacement requested" that no one acts on.
  const auto missing = replace_cannot_run(policy_.hooks);
  const auto& own_before = journal_.own_drain();
  const std::string reason =
      missing ? reason_needing(own_before ? own_before->reason : e.reason, missing->needs) : e.reason;
  // A reboot still finishing (healthd runs again before slurmd has registered): slurmd registering
  // may still change the node's state and reason. Wait for it, 10 minutes at most.
  if (info->reboot_pending() && now - e.created < std::chrono::minutes(10)) {
    journal_.wait_until(e.id, now + std::chrono::seconds(2), "waiting for the node's reboot to finish");
    return false;
  }
  if (info->drained_or_draining() && !info->reason.starts_with(kReasonPrefix)) {
    // Someone else's drain: their reason stays; the replace hooks still run (the cure is theirs to finish).
    spdlog::info("node {} is drained by someone else ({}); replacement requested without changing it", e.node,
                 sanitize(info->reason, 240));
  } else if (info->drained_or_draining()) {
    if (info->reason != reason)
      if (auto r = slurm_.set_reason(e.node, reason); !r) return std::unexpected(r.error().message);
  } else {
    // Back in service (an admin resumed it): drained again, within the share cap.
    JournalEntry drain = e;
    drain.kind = Action::drain;
    drain.reason = reason;
    drain.reboot = false;
    auto r = do_drain(drain, now);
    if (!r) return r;
    if (!withheld_.empty()) {
      // Withheld by the share cap (status says so): asked again later, nothing requested meanwhile.
      journal_.wait_until(e.id, now + std::chrono::seconds(30), withheld_);
      return false;
    }
  }
  auto& own = journal_.own_drain();
  if (!own) own = OwnDrain{e.code, reason, now, true, false, std::nullopt, std::nullopt};
  if (missing) {
    acted_.reset();  // nothing was requested: no "replacement requested" notice
    own->reason = reason;
    own->held = true;
    cannot_run_here(*missing, reason, now);
    return true;
  }
  own->reason = reason;
  own->held = true;  // new hardware: never returned by healthd itself
  if (own->cure) {
    own->cure->phase = CureProgress::Phase::exhausted;
    own->cure->since = now;
    own->cure->last = "replacement requested";
  }
  spdlog::error("node {}: replacement requested: {}", e.node, e.reason);
  acted_ = Action::replace;
  return true;
}

}  // namespace ar::healthd
