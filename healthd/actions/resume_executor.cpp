// A resume entry carried out: healthd's own drain given back once the node passed its checks again,
// or an admin's resume through healthctl.
#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::expected<bool, std::string> SlurmActions::do_resume(const JournalEntry& e, WallTime now) {
  auto info = slurm_.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  auto& own = journal_.own_drain();
  if (e.admin) {
    // An admin's resume: of healthd's drain even when held (that is what held waits for), and of
    // anyone's with --force. A fault still standing is then the admin's override (not drained again).
    if (!info->drained_or_draining()) {
      admin_outcome_ = "not drained (" + (info->state.empty() ? std::string("in service") : info->state) + "); nothing to resume";
      own.reset();
      return true;
    }
    if (!info->reason.starts_with(kReasonPrefix) && !e.force) {
      admin_outcome_ = "not resumed: drained by someone else (" + sanitize(info->reason, 120) + "); use --force";
      return true;
    }
    if (auto r = slurm_.resume(e.node); !r) return std::unexpected(r.error().message);
    acted_ = Action::resume;
    spdlog::warn("node {} resumed by an admin through healthctl (was: {})", e.node, sanitize(info->reason, 240));
    own.reset();
    return true;
  }
  if (!info->drained_or_draining() || !info->reason.starts_with(kReasonPrefix)) {
    // Resumed by an admin, or re-drained with their own reason: not ours any more.
    own.reset();
    return true;
  }
  if (!own || own->held) return true;
  // A reboot is on its way: resuming the node now would cancel the reboot that cures the fault. After
  // it the node is still drained (no nextstate=RESUME), and healthd returns it here once healthy.
  if (own->reboot && info->reboot_pending()) return true;
  if (auto r = slurm_.resume(e.node); !r) return std::unexpected(r.error().message);
  acted_ = Action::resume;
  spdlog::info("node {} passed {} checks in a row: resumed (was: {})", e.node, policy_.recovery_passes, own->reason);
  own.reset();
  (void)now;
  return true;
}

}  // namespace ar::healthd
