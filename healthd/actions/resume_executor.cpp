// A resume entry carried out: healthd's own drain given back once the node passed its checks again,
// or an admin's resume through healthctl.
#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "text/text.hpp"
#include "vocabulary/fault_codes.hpp"

namespace ar::healthd {
namespace {

// An admin's resume: of healthd's drain even when held (that is what held waits for), and of anyone's
// with --force. A fault still standing is then the admin's override (not drained again).
std::expected<Carried, std::string> admin_resume(const ExecutorServices& services, const JournalEntry& e, const NodeInfo& info) {
  auto& own = services.journal.own_drain();
  if (!info.drained_or_draining()) {
    own.reset();
    return Carried{.admin_outcome = "not drained (" + (info.state.empty() ? std::string("in service") : info.state) +
                                    "); nothing to resume"};
  }
  if (!info.reason.starts_with(kReasonPrefix) && !e.force)
    return Carried{.admin_outcome = "not resumed: drained by someone else (" + sanitize(info.reason, 120) + "); use --force"};
  if (auto r = services.slurm.resume(e.node); !r) return std::unexpected(r.error().message);
  spdlog::warn("node {} resumed by an admin through healthctl (was: {})", e.node, sanitize(info.reason, 240));
  own.reset();
  return Carried{.acted = Action::resume};
}

}  // namespace

std::expected<Carried, std::string> carry_out_resume(const ExecutorServices& services, const JournalEntry& e, WallTime) {
  auto info = services.slurm.node(e.node);
  if (!info) return std::unexpected(info.error().message);
  if (e.admin) return admin_resume(services, e, *info);
  auto& own = services.journal.own_drain();
  if (!info->drained_or_draining() || !info->reason.starts_with(kReasonPrefix)) {
    // Resumed by an admin, or re-drained with their own reason: not ours any more.
    own.reset();
    return Carried{};
  }
  if (!own || own->held) return Carried{};
  // A reboot is on its way: resuming the node now would cancel the reboot that cures the fault. After
  // it the node is still drained (no nextstate=RESUME), and healthd returns it here once healthy.
  if (own->reboot && info->reboot_pending()) return Carried{};
  if (auto r = services.slurm.resume(e.node); !r) return std::unexpected(r.error().message);
  spdlog::info("node {} passed {} checks in a row: resumed (was: {})", e.node, services.policy.recovery_passes, own->reason);
  own.reset();
  return Carried{.acted = Action::resume};
}

}  // namespace ar::healthd
