// The drain entry, carried out (SlurmActions::do_drain), and max_drained_share: the drain is held back
// when it would take out more than the share of a partition, and once it has taken, ranked against the
// other drains of the same event and given back when past the share (settle_share). The decisions are
// policy/share_policy's; this file reads Slurm's node table and makes the calls.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/slurm_actions.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {

// After a drain has taken, when to rank it against the others once more (settle_share); why 2 s:
// policy/requeue_policy.hpp.
using policy::kShareSettle;

}  // namespace

// Whether max_drained_share can hold back a drain: not an admin's (theirs to decide), and not at 1
// (every node may be drained), where judging it would read the whole node table for nothing.
bool SlurmActions::share_applies(const JournalEntry& e) const { return !e.admin && policy_.max_drained_share < 1.0; }

// Slurm's whole node table, and `node`'s record in it: one read serves every partition of the node.
std::expected<SlurmActions::TableView, std::string> SlurmActions::read_table(const std::string& node) {
  auto table = slurm_.node_table();
  if (!table) return std::unexpected(table.error().message);
  auto self = std::find_if(table->begin(), table->end(), [&](const NodeInfo& n) { return n.name == node; });
  if (self == table->end()) return std::unexpected("slurmctld's node table has no node '" + node + "'");
  NodeInfo found = *self;
  return TableView{std::move(*table), std::move(found)};
}

// Ranks our drain, in place, against the others of each partition; when it is past the share, gives
// it back (resume) and answers why. Nothing: kept (or a reboot already under way, after which the node
// is still drained and healthd returns it once healthy). An error: the resume failed; the drain stays.
std::expected<std::optional<std::string>, std::string> SlurmActions::give_back_past_share(const TableView& view) {
  const auto over = policy::share_exceeded(view.table, view.self, true, policy_.max_drained_share);
  if (over.empty()) return std::optional<std::string>();
  // A reboot slurmd has been told to do cannot be called off; a resume now would only lose the
  // node's way back (healthd returns it after the reboot). One asked for but not begun can.
  if (view.self.reboot_issued) {
    spdlog::warn("node {}: past max_drained_share ({}), but its reboot is under way; healthd returns it once it is back",
                 view.self.name, over);
    return std::optional<std::string>();
  }
  if (auto r = slurm_.resume(view.self.name); !r)
    return std::unexpected("drained past max_drained_share (" + over + "), and could not be resumed: " + r.error().message);
  withheld_ = "drain of " + view.self.name + " undone: " + over;
  return std::optional<std::string>(withheld_);
}

void SlurmActions::settle_share(WallTime now) {
  auto& own = journal_.own_drain();
  if (!own || !own->share_look || now < *own->share_look) return;
  auto save = [&] {
    if (auto r = journal_.save(); !r) spdlog::error("journal: {}", r.error());
  };
  if (policy_.max_drained_share >= 1.0) {  // raised to 1 by a reload since: nothing to rank
    own->share_look.reset();
    save();
    return;
  }
  auto view = read_table(node_);
  if (view && (!view->self.drained_or_draining() || !view->self.reason.starts_with(kReasonPrefix))) {
    own->share_look.reset();  // resumed, or an admin's drain now: no longer ours to rank
    save();
    return;
  }
  auto given_back = view ? give_back_past_share(*view)
                         : std::expected<std::optional<std::string>, std::string>(std::unexpected(view.error()));
  if (!given_back) {
    // Looked at again shortly: one node too many out for a while beats a faulty node back in service.
    // The requeue waits no longer: the drain stays until a look says otherwise.
    spdlog::warn("node {}: looking again at max_drained_share: {}", node_, given_back.error());
    own->share_look = now + kShareSettle;
    own->burst.emplace();
    save();
    return;
  }
  if (!*given_back) {
    own->share_look.reset();
    save();
    return;
  }
  // The drain's notice went out when it took; this one says it was given back. A job requeued after
  // the drain stays requeued (it may run elsewhere already); one still to be decided is left in place.
  spdlog::error("{}; fault: {}", **given_back, own->reason);
  JournalEntry about;
  about.node = node_;
  about.code = own->code;
  own.reset();
  save();
  notice(NoticeKind::node_returned, about, **given_back + " (ranked once every drain of its second was in)", "resume", now);
}

std::expected<bool, std::string> SlurmActions::do_drain(const JournalEntry& e, WallTime now) {
  auto view = drain_view(e);
  if (!view) return std::unexpected(view.error());
  const bool ranked = share_applies(e) && !view->self.partitions.empty();  // our drain is ranked after it takes
  if (view->self.drained_or_draining()) return drain_in_place(e, view->self, ranked, now);
  // Never take out more than the allowed share of any partition this node is in.
  if (share_applies(e)) {
    if (auto over = policy::share_exceeded(view->table, view->self, false, policy_.max_drained_share); !over.empty()) {
      withheld_ = "drain of " + e.node + " withheld: " + over;
      spdlog::error("{}; fault: {}", withheld_, e.reason);
      return true;
    }
  }
  return drain_take(e, ranked, now);
}

// Where the share may hold the drain back, the whole table is read at once: the node's own record
// is in it, and one read serves every partition the node is in. Elsewhere, the node's record alone.
std::expected<SlurmActions::TableView, std::string> SlurmActions::drain_view(const JournalEntry& e) {
  if (share_applies(e)) return read_table(e.node);
  auto n = slurm_.node(e.node);
  if (!n) return std::unexpected(n.error().message);
  return TableView{{}, std::move(*n)};
}

// The node is drained already: by someone else (theirs, left as it is), or by us (a replay, a lesser
// fault's drain that now needs a reboot, or a cure's next step).
std::expected<bool, std::string> SlurmActions::drain_in_place(const JournalEntry& e, const NodeInfo& info, bool ranked,
                                                              WallTime now) {
  if (!info.reason.starts_with(kReasonPrefix)) {
    // An admin (or another tool) drained it first: their reason stays, and the node is theirs.
    spdlog::info("node {} is already drained by someone else ({}); leaving it as it is", e.node, sanitize(info.reason, 240));
    admin_outcome_ = "already drained by someone else (" + sanitize(info.reason, 120) + "); left as it is";
    if (e.cure && journal_.own_drain() && journal_.own_drain()->code == e.code)
      journal_.own_drain().reset();  // a cure step of ours on a node that is now theirs: the cure ends
    return true;
  }
  bool rebooting = info.reboot_pending();
  std::string reboot_error;
  bool cannot_reboot = false;
  std::string reason = e.reason;
  if (e.reboot && !rebooting) {
    // Drained by us for a lesser fault, or a cure's next step: now a reboot.
    if (auto r = slurm_.reboot(e.node, e.reason); r) rebooting = true;
    else if (r.error().kind == SlurmError::Kind::not_answering) {
      return std::unexpected(r.error().message);  // not asked: asked again later, the node stays drained
    } else {
      reboot_error = r.error().message;
      // No RebootProgram: the step cannot run here; the reason says what the node needs.
      cannot_reboot = r.error().kind == SlurmError::Kind::not_set_up && e.cure;
      if (cannot_reboot) reason = reason_needing(e.reason, reboot_cannot_run("")->needs);
      spdlog::error("node {}: scontrol reboot failed ({}); it stays drained", e.node, reboot_error);
    }
  }
  if (info.reason != reason && !rebooting) {
    if (auto r = slurm_.set_reason(e.node, reason); !r) return std::unexpected(r.error().message);
  }
  // A look at the share still due stays due. A drain of ours never looked at (the daemon was
  // killed after the drain took, before it was saved) is looked at now.
  const auto& before = journal_.own_drain();
  const auto look = before ? before->share_look : (ranked ? std::optional<WallTime>(now) : std::nullopt);
  own_drain_from(e, rebooting, reboot_error, now, cannot_reboot);
  journal_.own_drain()->share_look = look;
  acted_ = rebooting ? Action::reboot : Action::drain;  // ours: this drain, or a replay of it
  return true;
}

// The node is in service: drained now (rebooted, where that is the cure), then ranked.
std::expected<bool, std::string> SlurmActions::drain_take(const JournalEntry& e, bool ranked, WallTime now) {
  bool rebooting = false;
  std::string reboot_error;
  bool cannot_reboot = false;
  bool reboot_later = false;
  if (e.reboot) {
    // The cure is a reboot: Slurm drains the node, reboots it once the requeued jobs have left, and
    // it comes back still drained, for healthd to judge and return. Where it cannot, the node is
    // drained and the reason says why (no RebootProgram: what the node needs).
    if (auto r = slurm_.reboot(e.node, e.reason); r) {
      rebooting = true;
      spdlog::warn("node {}: drained, reboot requested (it comes back drained): {}", e.node, e.reason);
    } else {
      reboot_error = r.error().message;
      cannot_reboot = r.error().kind == SlurmError::Kind::not_set_up && e.cure;
      reboot_later = r.error().kind == SlurmError::Kind::not_answering && e.cure;
      spdlog::error("node {}: scontrol reboot failed ({}); draining it instead", e.node, reboot_error);
    }
  }
  if (!rebooting) {
    std::string reason = cannot_reboot ? reason_needing(e.reason, reboot_cannot_run("")->needs)
                                       : short_reason(e.reboot ? e.reason + " (reboot needed)" : e.reason);
    if (auto r = slurm_.drain(e.node, reason); !r) return std::unexpected(r.error().message);
    spdlog::warn("drained node {}: {}", e.node, reason);
  }
  std::optional<std::vector<std::string>> burst;
  if (ranked) {
    burst = rank_new_drain(e);
    if (!burst) return true;  // given back: past the share
  }
  withheld_.clear();
  own_drain_from(e, rebooting, reboot_error, now, cannot_reboot, reboot_later);
  if (ranked) {
    journal_.own_drain()->share_look = now + kShareSettle;
    journal_.own_drain()->burst = std::move(*burst);
  }
  acted_ = rebooting ? Action::reboot : Action::drain;  // what was done, not what was meant
  return true;
}

// The daemons of other nodes hit by the same event (a fabric-wide fault) looked at the partition in
// the same instant and each saw room for one more drain. Looked at again with the drains in place,
// the ones past the share give theirs back, before their jobs are requeued; a failed look or resume
// keeps the drain (one node too many out beats a faulty node in service by mistake). Drains of the
// same second still landing are ranked by settle_share once that second is over. Nothing: given back;
// else the other drains around ours (empty after a failed look: the requeue then does not wait).
std::optional<std::vector<std::string>> SlurmActions::rank_new_drain(const JournalEntry& e) {
  auto again = read_table(e.node);
  auto given_back = again ? give_back_past_share(*again)
                          : std::expected<std::optional<std::string>, std::string>(std::unexpected(again.error()));
  if (!given_back) spdlog::error("node {}: {}", e.node, given_back.error());
  if (given_back && *given_back) {
    spdlog::error("{}; fault: {}", **given_back, e.reason);
    return std::nullopt;
  }
  return again ? policy::burst_around(again->table, again->self) : std::vector<std::string>{};
}

}  // namespace ar::healthd
