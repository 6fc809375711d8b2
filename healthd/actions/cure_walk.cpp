// The cure chain's steps, carried out (see policy/cure_plan.hpp for which chain a fault gets). The
// chain and how far it got live in healthd's own drain (state/journal.hpp CureProgress), saved with
// the journal; each step is a journal entry like any action, so a daemon killed in the middle of a
// step does it again after its restart (a GPU reset or a deep check twice is harmless) and never
// skips it. A step runs once the drain it follows is carried out; the next step starts when one
// fails, or when the responder finds the same fault again after it (fault_seen). What the chain does
// next is policy/cure_policy.hpp's decision; here it is asked and carried out.
//
// A step whose means are missing here (no reset command, no RebootProgram in Slurm's config, no
// replace hook) did not run, so it says nothing about the fault: it is not a failed step. The chain
// stops there (phase cannot_run) and the node is held for an admin, its reason saying what it needs;
// replace is reached only through steps that ran and did not cure (issue 31).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "actions/cure_walk.hpp"
#include "config/fields.hpp"
#include "policy/cure_policy.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {

void save(Journal& journal) {
  if (auto r = journal.save(); !r) spdlog::error("journal: {}", r.error());
}

}  // namespace

std::optional<CannotRun> replace_cannot_run(const std::vector<HookConfig>& hooks) {
  for (const auto& h : hooks)
    if (std::find(h.on.begin(), h.on.end(), Action::replace) != h.on.end()) return std::nullopt;
  return CannotRun{"no [[policy.hook]] runs on replace, so nothing would ask for the new hardware",
                   "needs replacing: no replace hook; add a [[policy.hook]] on replace"};
}

std::optional<CannotRun> reboot_cannot_run(const std::string& reboot_program) {
  if (!reboot_program.empty()) return std::nullopt;
  return CannotRun{"slurm.conf has no RebootProgram, so Slurm cannot reboot the node",
                   "needs a reboot: slurm.conf has no RebootProgram"};
}

std::string reason_needing(std::string base, const std::string& needs) {
  // healthd's own endings, from an earlier step: the last one says what is true now.
  for (const char* ending : {" (replacement requested)", " (reboot needed)", " (needs "})
    if (auto at = base.find(ending); at != std::string::npos) base.resize(at);
  const std::string tail = " (" + needs + ")";
  constexpr std::size_t kMax = kMaxReasonBytes;  // as every reason healthd writes (short_reason)
  return truncate_utf8(std::move(base), tail.size() < kMax ? kMax - tail.size() : 0) + tail;
}

void hold_cannot_run(const ExecutorServices& services, const CannotRun& missing, const std::string& reason, WallTime now) {
  auto& own = services.journal.own_drain();
  if (!own || !own->cure) return;
  auto& c = *own->cure;
  const Action step = c.current();
  c.phase = CureProgress::Phase::cannot_run;
  c.since = now;
  c.last = to_string(step) + " cannot run here: " + missing.why;
  own->reason = reason;
  own->held = true;  // what it needs is an admin's to provide; healthd does not return it itself
  spdlog::error("node {}: cure of {}: {} cannot run here ({}); the node stays drained until an admin resumes it",
                services.node, own->code, to_string(step), missing.why);
  cure_notice(services,
              to_string(step) + " cannot run here: " + missing.why + "; node " + services.node +
                  " stays drained until an admin resumes it (" + missing.needs + ")",
              step, now);
  save(services.journal);
}

namespace {

// A step of the cure is journalled and not yet carried out (a reboot is a drain that reboots).
bool cure_entry_pending(const Journal& journal) {
  return std::any_of(journal.pending().begin(), journal.pending().end(), [](const JournalEntry& e) {
    return e.kind == Action::reset_gpu || e.kind == Action::replace || e.kind == Action::deep_check ||
           (e.kind == Action::drain && e.reboot && e.cure);
  });
}

// The jobs the fault ended here see what became of the node (healthctl explain).
void record_cure(const ExecutorServices& services, const std::string& what, WallTime now) {
  const auto& own = services.journal.own_drain();
  if (!own || !own->cure) return;
  for (auto job : own->cure->jobs) services.timeline.record(job, {now, services.node, "node cure", sanitize(what, 300)});
}

// What Slurm shows of this node for the cure's decisions (policy/cure_policy.hpp), asked only when
// this boot is the one the cure's reboot was asked in.
policy::NodeSighting sight_node(const ExecutorServices& services, const CureProgress& c) {
  policy::NodeSighting seen;
  seen.rebooted = !services.boot_id.empty() && !c.boot_id.empty() && services.boot_id != c.boot_id;
  // A new boot settles both questions asked of Slurm here (back in service? the reboot over?).
  if (seen.rebooted) return seen;
  if (auto info = services.slurm.node(services.node)) {
    seen.slurm_answered = true;
    seen.drained = info->drained_or_draining();
    seen.reboot_pending = info->reboot_pending();
  }
  return seen;
}

// Journals the cure's current step (its phase becomes running).
void start_step(const ExecutorServices& services, WallTime now) {
  auto& own = services.journal.own_drain();
  if (!own || !own->cure || own->cure->at_end() || cure_entry_pending(services.journal)) return;
  auto& c = *own->cure;
  const Action step = c.current();
  c.phase = CureProgress::Phase::running;
  c.since = now;
  JournalEntry e = due_entry(Action::drain, services.node, own->code, now);  // its kind: by the step
  switch (step) {
    case Action::reset_gpu:
      e.kind = Action::reset_gpu;
      e.reason = own->reason;
      c.last = "GPU reset journalled";
      break;
    case Action::reboot:
      // Carried out as a drain whose cure is a reboot (carry_out_drain): the node is ours already.
      e.kind = Action::drain;
      e.reboot = true;
      e.reason = own->reason;
      e.held = own->held;
      c.last = "reboot journalled";
      break;
    case Action::replace: {
      e.kind = Action::replace;
      std::string base = own->reason;
      if (auto at = base.find(" (replacement requested)"); at != std::string::npos) base.resize(at);
      e.reason = truncate_utf8(base, 240 - 24) + " (replacement requested)";
      e.held = true;
      c.last = "replacement journalled";
      break;
    }
    default: return;
  }
  e.cure = c;
  const std::string which = "step " + std::to_string(c.step + 1) + " of " + std::to_string(c.chain.size()) + " (" +
                            chain_text(c.chain) + "): " + to_string(step);
  spdlog::warn("node {}: cure of {}: {}", services.node, own->code, which);
  record_cure(services, which, now);
  if (auto r = services.journal.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
}

// The current step failed or did not cure (`why`): the next one starts, or the chain is exhausted.
void next_cure_step(const ExecutorServices& services, const std::string& why, WallTime now) {
  auto& own = services.journal.own_drain();
  if (!own || !own->cure) return;
  const Action was = own->cure->current();
  spdlog::warn("node {}: cure of {}: {} did not cure it: {}", services.node, own->code, to_string(was), why);
  cure_notice(services, to_string(was) + " did not cure " + own->code + ": " + why, was, now);
  own->cure = policy::after_failed_step(*own->cure, why, now);
  if (own->cure->phase == CureProgress::Phase::exhausted) {
    own->held = true;  // nothing healthd knows cures it: the node waits for an admin
    spdlog::error("node {}: cure of {}: every step ({}) was tried; the node stays out until an admin resumes it",
                  services.node, own->code, chain_text(own->cure->chain));
    cure_notice(services,
                "every step of the cure (" + chain_text(own->cure->chain) + ") was tried: node " + services.node +
                    " stays out until an admin resumes it",
                Action::none, now);
  } else {
    start_step(services, now);
  }
  save(services.journal);
}

}  // namespace

void continue_cure(const ExecutorServices& services, WallTime now) {
  auto& own = services.journal.own_drain();
  if (services.policy.report_only || !own || !own->cure || cure_entry_pending(services.journal)) return;
  // The first step follows the drain at once (a reboot was the drain itself); a step that failed
  // hands over to the next at once. A step carried out waits for the next sweep's verdict.
  if (own->cure->phase == CureProgress::Phase::pending && !own->cure->at_end()) {
    start_step(services, now);
  } else if (own->cure->phase == CureProgress::Phase::failed) {
    const std::string why = own->cure->last;
    next_cure_step(services, why, now);
  }
}

bool cure_under_way(const Journal& journal) {
  const auto& own = journal.own_drain();
  return cure_entry_pending(journal) || (own && own->cure && own->cure->phase == CureProgress::Phase::running);
}

void cure_fault_seen(const ExecutorServices& services, const std::string& code, WallTime at, WallTime now) {
  if (services.policy.report_only) return;
  auto& own = services.journal.own_drain();
  if (!own || !own->cure || own->code != code || cure_entry_pending(services.journal)) return;
  auto& c = *own->cure;
  c.deep_checked = false;  // a deep check passed before the fault came back says nothing
  if (policy::chain_stopped(c)) return;
  const auto decision = policy::when_fault_found(c, sight_node(services, c), at > c.since);
  switch (decision.move) {
    case policy::CureMove::stay: return;
    case policy::CureMove::admin_took_over:
      // The fault is not acted on again (status: override).
      spdlog::warn("node {}: back in service during the cure of {} ({}): the cure ends there", services.node, code,
                   chain_text(c.chain));
      services.memory.overridden = code;
      own.reset();
      break;
    case policy::CureMove::run_step:
      c.phase = CureProgress::Phase::pending;
      start_step(services, now);
      break;
    case policy::CureMove::next_step: next_cure_step(services, decision.why, now); return;
  }
  save(services.journal);
}

void cure_healthy_seen(const ExecutorServices& services, WallTime now) {
  auto& own = services.journal.own_drain();
  if (!own || !own->cure || cure_entry_pending(services.journal)) return;
  auto& c = *own->cure;
  if (!policy::waiting_on_reboot(c) || !policy::reboot_over(sight_node(services, c))) return;
  c.phase = CureProgress::Phase::verifying;
  c.since = now;
  c.last = "rebooted";
  save(services.journal);
}

void cure_notice(const ExecutorServices& services, const std::string& message, Action step, WallTime now) {
  JournalEntry about;
  about.node = services.node;
  about.code = services.journal.own_drain() ? services.journal.own_drain()->code : std::string();
  raise_notice(services, NoticeKind::cure, about, message, step == Action::none ? "none" : to_string(step), now);
  record_cure(services, message, now);
}

}  // namespace ar::healthd
