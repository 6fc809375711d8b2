// The drain entry, carried out (carry_out_drain), and max_drained_share: the drain is held back
// when it would take out more than the share of a partition, and once it has taken, ranked against the
// other drains of the same event and given back when past the share (settle_share). The decisions are
// policy/share_policy's; this file reads Slurm's node table and makes the calls.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/executor.hpp"
#include "policy/requeue_policy.hpp"  // kShareSettle
#include "policy/share_policy.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {

// After a drain has taken, when to rank it against the others once more (settle_share); why 2 s:
// policy/requeue_policy.hpp.
using policy::kShareSettle;

// One read of Slurm's node table, with this node's record.
struct TableView {
  std::vector<NodeInfo> table;  // empty where the share is not judged (only `self` was read)
  NodeInfo self;
};

// A drain carried out, and how its reboot went where one was asked for: what own_drain_from records.
struct DrainTaken {
  bool rebooting = false;
  std::string reboot_error = {};  // a reboot asked for and refused: why
  bool cannot_reboot = false;     // the cluster cannot reboot at all (no RebootProgram): the step cannot run here
  bool reboot_later = false;      // Slurm did not answer: the step is asked again
};

// Whether max_drained_share can hold back a drain: not an admin's (theirs to decide), and not at 1
// (every node may be drained), where judging it would read the whole node table for nothing.
bool share_applies(const ExecutorServices& services, const JournalEntry& e) {
  return !e.admin && services.policy.max_drained_share < 1.0;
}

// Slurm's whole node table, and `node`'s record in it: one read serves every partition of the node.
std::expected<TableView, std::string> read_table(SlurmClient& slurm, const std::string& node) {
  auto table = slurm.node_table();
  if (!table) return std::unexpected(table.error().message);
  auto self = std::find_if(table->begin(), table->end(), [&](const NodeInfo& n) { return n.name == node; });
  if (self == table->end()) return std::unexpected("slurmctld's node table has no node '" + node + "'");
  NodeInfo found = *self;
  return TableView{std::move(*table), std::move(found)};
}

// Ranks our drain, in place, against the others of each partition; when it is past the share, gives
// it back (resume) and answers why. Nothing: kept (or a reboot already under way, after which the node
// is still drained and healthd returns it once healthy). An error: the resume failed; the drain stays.
std::expected<std::optional<std::string>, std::string> give_back_past_share(const ExecutorServices& services,
                                                                             const TableView& view) {
  const auto over = policy::share_exceeded(view.table, view.self, true, services.policy.max_drained_share);
  if (over.empty()) return std::optional<std::string>();
  // A reboot slurmd has been told to do cannot be called off; a resume now would only lose the
  // node's way back (healthd returns it after the reboot). One asked for but not begun can.
  if (view.self.reboot_issued) {
    spdlog::warn("node {}: past max_drained_share ({}), but its reboot is under way; healthd returns it once it is back",
                 view.self.name, over);
    return std::optional<std::string>();
  }
  if (auto r = services.slurm.resume(view.self.name); !r)
    return std::unexpected("drained past max_drained_share (" + over + "), and could not be resumed: " + r.error().message);
  services.memory.withheld = "drain of " + view.self.name + " undone: " + over;
  return std::optional<std::string>(services.memory.withheld);
}

// The drain `e` (carried out as `taken` says) becomes healthd's own, with its cure.
void own_drain_from(const ExecutorServices& services, const JournalEntry& e, const DrainTaken& taken, WallTime now) {
  auto& journal = services.journal;
  const auto& before = journal.own_drain();
  const bool same_fault = before && before->code == e.code;
  // Held (flapping, a replacement) stays held: a later entry for the same fault never lifts it.
  OwnDrain d{e.code, e.reason, now, e.held || (same_fault && before->held), taken.rebooting, std::nullopt, std::nullopt};
  d.cure = e.cure;
  // The same fault again while its cure is under way (it came back after a reset): the chain goes
  // on from where it is, not from its first step.
  const bool fresh = e.cure && e.cure->step == 0 && e.cure->phase == CureProgress::Phase::pending;
  if (same_fault && before->cure && (!e.cure || (fresh && (before->cure->step > 0 || before->cure->phase != CureProgress::Phase::pending))))
    d.cure = before->cure;
  if (d.cure) d.cure->deep_checked = false;  // the fault is here again: a pass before it says nothing
  if (same_fault && before->held && !e.held) d.reason = before->reason;
  if (d.cure && e.reboot && d.cure->current() == Action::reboot) {
    d.cure->since = now;
    if (taken.rebooting) {
      d.cure->phase = CureProgress::Phase::running;
      d.cure->boot_id = services.boot_id;
      d.cure->last = "reboot asked for";
    } else if (taken.cannot_reboot) {
      // Not a reboot that failed: none can happen here. Held, the reason says what it needs (the
      // drain set that reason on Slurm).
      journal.own_drain() = d;
      const auto missing = *reboot_cannot_run("");
      hold_cannot_run(services, missing, reason_needing(e.reason, missing.needs), now);
      return;
    } else if (taken.reboot_later) {
      // Slurm did not answer: the node is drained, the reboot is asked again (continue_cure).
      d.cure->phase = CureProgress::Phase::pending;
      d.cure->last = "reboot not asked yet: " + sanitize(taken.reboot_error, 200);
    } else {
      d.cure->phase = CureProgress::Phase::failed;
      d.cure->last = "scontrol reboot failed: " + sanitize(taken.reboot_error, 200);
    }
  }
  journal.own_drain() = d;
}

// What a drain of ours carried out is: a reboot where one was asked for (what was done, not what was meant).
Carried drained(bool rebooting) { return Carried{.acted = rebooting ? Action::reboot : Action::drain}; }

// Where the share may hold the drain back, the whole table is read at once: the node's own record
// is in it, and one read serves every partition the node is in. Elsewhere, the node's record alone.
std::expected<TableView, std::string> drain_view(const ExecutorServices& services, const JournalEntry& e) {
  if (share_applies(services, e)) return read_table(services.slurm, e.node);
  auto n = services.slurm.node(e.node);
  if (!n) return std::unexpected(n.error().message);
  return TableView{{}, std::move(*n)};
}

// The node is drained already: by someone else (theirs, left as it is), or by us (a replay, a lesser
// fault's drain that now needs a reboot, or a cure's next step).
std::expected<Carried, std::string> drain_in_place(const ExecutorServices& services, const JournalEntry& e,
                                                   const NodeInfo& info, bool ranked, WallTime now) {
  auto& journal = services.journal;
  if (!info.reason.starts_with(kReasonPrefix)) {
    // An admin (or another tool) drained it first: their reason stays, and the node is theirs.
    spdlog::info("node {} is already drained by someone else ({}); leaving it as it is", e.node, sanitize(info.reason, 240));
    if (e.cure && journal.own_drain() && journal.own_drain()->code == e.code)
      journal.own_drain().reset();  // a cure step of ours on a node that is now theirs: the cure ends
    return Carried{.admin_outcome = "already drained by someone else (" + sanitize(info.reason, 120) + "); left as it is"};
  }
  DrainTaken taken{.rebooting = info.reboot_pending()};
  std::string reason = e.reason;
  if (e.reboot && !taken.rebooting) {
    // Drained by us for a lesser fault, or a cure's next step: now a reboot.
    if (auto r = services.slurm.reboot(e.node, e.reason); r) taken.rebooting = true;
    else if (r.error().kind == SlurmError::Kind::not_answering) {
      return std::unexpected(r.error().message);  // not asked: asked again later, the node stays drained
    } else {
      taken.reboot_error = r.error().message;
      // No RebootProgram: the step cannot run here; the reason says what the node needs.
      taken.cannot_reboot = r.error().kind == SlurmError::Kind::not_set_up && e.cure;
      if (taken.cannot_reboot) reason = reason_needing(e.reason, reboot_cannot_run("")->needs);
      spdlog::error("node {}: scontrol reboot failed ({}); it stays drained", e.node, taken.reboot_error);
    }
  }
  if (info.reason != reason && !taken.rebooting) {
    if (auto r = services.slurm.set_reason(e.node, reason); !r) return std::unexpected(r.error().message);
  }
  // A look at the share still due stays due. A drain of ours never looked at (the daemon was
  // killed after the drain took, before it was saved) is looked at now.
  const auto& before = journal.own_drain();
  const auto look = before ? before->share_look : (ranked ? std::optional<WallTime>(now) : std::nullopt);
  own_drain_from(services, e, taken, now);
  journal.own_drain()->share_look = look;
  return drained(taken.rebooting);  // ours: this drain, or a replay of it
}

// The daemons of other nodes hit by the same event (a fabric-wide fault) looked at the partition in
// the same instant and each saw room for one more drain. Looked at again with the drains in place,
// the ones past the share give theirs back, before their jobs are requeued; a failed look or resume
// keeps the drain (one node too many out beats a faulty node in service by mistake). Drains of the
// same second still landing are ranked by settle_share once that second is over. Nothing: given back;
// else the other drains around ours (empty after a failed look: the requeue then does not wait).
std::optional<std::vector<std::string>> rank_new_drain(const ExecutorServices& services, const JournalEntry& e) {
  auto again = read_table(services.slurm, e.node);
  auto given_back = again ? give_back_past_share(services, *again)
                          : std::expected<std::optional<std::string>, std::string>(std::unexpected(again.error()));
  if (!given_back) spdlog::error("node {}: {}", e.node, given_back.error());
  if (given_back && *given_back) {
    spdlog::error("{}; fault: {}", **given_back, e.reason);
    return std::nullopt;
  }
  return again ? policy::burst_around(again->table, again->self) : std::vector<std::string>{};
}

// The node is in service: drained now (rebooted, where that is the cure), then ranked.
std::expected<Carried, std::string> drain_take(const ExecutorServices& services, const JournalEntry& e, bool ranked,
                                               WallTime now) {
  DrainTaken taken;
  if (e.reboot) {
    // The cure is a reboot: Slurm drains the node, reboots it once the requeued jobs have left, and
    // it comes back still drained, for healthd to judge and return. Where it cannot, the node is
    // drained and the reason says why (no RebootProgram: what the node needs).
    if (auto r = services.slurm.reboot(e.node, e.reason); r) {
      taken.rebooting = true;
      spdlog::warn("node {}: drained, reboot requested (it comes back drained): {}", e.node, e.reason);
    } else {
      taken.reboot_error = r.error().message;
      taken.cannot_reboot = r.error().kind == SlurmError::Kind::not_set_up && e.cure;
      taken.reboot_later = r.error().kind == SlurmError::Kind::not_answering && e.cure;
      spdlog::error("node {}: scontrol reboot failed ({}); draining it instead", e.node, taken.reboot_error);
    }
  }
  if (!taken.rebooting) {
    std::string reason = taken.cannot_reboot ? reason_needing(e.reason, reboot_cannot_run("")->needs)
                                             : short_reason(e.reboot ? e.reason + " (reboot needed)" : e.reason);
    if (auto r = services.slurm.drain(e.node, reason); !r) return std::unexpected(r.error().message);
    spdlog::warn("drained node {}: {}", e.node, reason);
  }
  std::optional<std::vector<std::string>> burst;
  if (ranked) {
    burst = rank_new_drain(services, e);
    if (!burst) return Carried{};  // given back: past the share
  }
  services.memory.withheld.clear();
  own_drain_from(services, e, taken, now);
  if (ranked) {
    services.journal.own_drain()->share_look = now + kShareSettle;
    services.journal.own_drain()->burst = std::move(*burst);
  }
  return drained(taken.rebooting);
}

}  // namespace

std::expected<Carried, std::string> carry_out_drain(const ExecutorServices& services, const JournalEntry& e, WallTime now) {
  auto view = drain_view(services, e);
  if (!view) return std::unexpected(view.error());
  const bool ranked = share_applies(services, e) && !view->self.partitions.empty();  // our drain is ranked after it takes
  if (view->self.drained_or_draining()) return drain_in_place(services, e, view->self, ranked, now);
  // Never take out more than the allowed share of any partition this node is in.
  if (share_applies(services, e)) {
    if (auto over = policy::share_exceeded(view->table, view->self, false, services.policy.max_drained_share); !over.empty()) {
      services.memory.withheld = "drain of " + e.node + " withheld: " + over;
      spdlog::error("{}; fault: {}", services.memory.withheld, e.reason);
      return Carried{};
    }
  }
  return drain_take(services, e, ranked, now);
}

// Our drain's second look at max_drained_share, once the second Slurm stamped it with is over on
// slurmctld's clock: every daemon of a fabric-wide event then ranks the same complete set of drains
// (reason time, then name), and exactly the ones past the share give theirs back. Saved with the
// drain, so a daemon killed before it looks again still does after its restart.
void settle_share(const ExecutorServices& services, WallTime now) {
  auto& own = services.journal.own_drain();
  if (!own || !own->share_look || now < *own->share_look) return;
  auto save = [&] {
    if (auto r = services.journal.save(); !r) spdlog::error("journal: {}", r.error());
  };
  if (services.policy.max_drained_share >= 1.0) {  // raised to 1 by a reload since: nothing to rank
    own->share_look.reset();
    save();
    return;
  }
  auto view = read_table(services.slurm, services.node);
  if (view && (!view->self.drained_or_draining() || !view->self.reason.starts_with(kReasonPrefix))) {
    own->share_look.reset();  // resumed, or an admin's drain now: no longer ours to rank
    save();
    return;
  }
  auto given_back = view ? give_back_past_share(services, *view)
                         : std::expected<std::optional<std::string>, std::string>(std::unexpected(view.error()));
  if (!given_back) {
    // Looked at again shortly: one node too many out for a while beats a faulty node back in service.
    // The requeue waits no longer: the drain stays until a look says otherwise.
    spdlog::warn("node {}: looking again at max_drained_share: {}", services.node, given_back.error());
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
  about.node = services.node;
  about.code = own->code;
  own.reset();
  save();
  raise_notice(services, NoticeKind::node_returned, about, **given_back + " (ranked once every drain of its second was in)",
               "resume", now);
}

}  // namespace ar::healthd
