#include "slurm_actions.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

// While Slurm has not answered once or does not know this node: how often to ask again.
constexpr auto kSlurmCheckEvery = std::chrono::seconds(5);

}  // namespace

SlurmActions::SlurmActions(std::string node, PolicyConfig policy, SlurmClient& slurm, Journal& journal, Timeline& timeline,
                           HookRunner run_hook)
    : node_(std::move(node)), policy_(std::move(policy)), slurm_(slurm), journal_(journal), timeline_(timeline),
      programs_(std::move(run_hook)) {
  programs_.report_ends_to(runs_ended_);
  resets_.runs.report_ends_to(runs_ended_);
}

void SlurmActions::run_due(WallTime now) {
  // An entry whose program or GPU reset ended is due now, whatever its poll said.
  for (const auto id : runs_ended_->take()) journal_.due_now(id, now);
  // Written before done: a decision the journal could not save is kept in memory, but nothing is
  // carried out until the journal is on disk again (a full state filesystem, say), or a crash in
  // between could lose the action or do it twice.
  if (auto d = journal_.make_durable(); !d) {
    if (!journal_unwritable_) spdlog::error("journal: cannot be written ({}); no action is carried out until it can", d.error());
    journal_unwritable_ = true;
    return;
  }
  if (journal_unwritable_) spdlog::info("journal: written again; carrying out the {} pending action(s)", journal_.pending().size());
  journal_unwritable_ = false;
  // Entries that need Slurm wait until it answers and knows this node; the others (a notice) do not.
  const bool ready = slurm_ready(now);
  if (ready) settle_share(services(), now);
  // Copy: carrying out an entry changes the journal. Checkpoint signals first (the job checkpoints
  // before anything else happens to it), then drains: a requeue waits for its node's drain, so in
  // one pass the drain lands and the requeue follows it at once.
  auto due = journal_.pending();
  auto rank = [](const JournalEntry& e) {
    const auto* x = executor_for(e.kind);
    return x != nullptr ? x->order : 0;
  };
  std::stable_sort(due.begin(), due.end(), [&](const JournalEntry& a, const JournalEntry& b) { return rank(a) < rank(b); });
  for (const auto& e : due) {
    if (e.next_try > now) continue;
    if (const auto* x = executor_for(e.kind); !ready && (x == nullptr || x->needs_slurm)) continue;
    if (!journal_.find(e.id)) continue;  // finished meanwhile by another entry's step
    const auto started = std::chrono::steady_clock::now();
    auto r = carry_out(e, now);
    if (r && r->finished) entry_finished(e, *r, now);
    else if (!r) entry_failed(e, r.error(), started, now);
    // false: the action waits for something and has set its next try itself.
  }
}

// One entry, by its executor.
std::expected<Carried, std::string> SlurmActions::carry_out(const JournalEntry& e, WallTime now) {
  const auto* executor = executor_for(e.kind);
  if (executor == nullptr) {
    // What a fault calls for (warn, reboot, ...) is never a journal entry of its own; one read from
    // a journal written by hand is dropped, not retried forever.
    spdlog::error("journal: entry {} has kind {}, which is not carried out; dropped", e.id, to_string(e.kind));
    return Carried{};
  }
  return executor->function(services(), e, now);
}

void SlurmActions::entry_finished(const JournalEntry& e, const Carried& carried, WallTime now) {
  // Journalled before the entry is marked done: never lost.
  if (carried.acted) journal_hooks_after(policy_, journal_, e, *carried.acted, now);
  notice_done(e, carried, now);
  if (auto c = journal_.complete(e.id); !c) spdlog::error("journal: {}", c.error());
  continue_cure(services(), now);
}

void SlurmActions::entry_failed(const JournalEntry& e, const std::string& error, std::chrono::steady_clock::time_point started,
                                WallTime now) {
  spdlog::warn("{} {}{}: will retry: {}", to_string(e.kind), e.job_id ? "job " + std::to_string(e.job_id) : "node ",
               e.job_id ? "" : e.node, error);
  // The wait runs from the failure, not from before the call: a call to a slurmctld that is down
  // or hung takes up to [slurm] timeout_s (libslurm retries its connection for about 9 s), so
  // waits of 2, 4 and 8 s counted from before it were over when it failed, and every daemon
  // asked again at once, for as long as slurmctld was away (bench/outage.sh).
  const WallTime failed_at = now + std::chrono::duration_cast<WallTime::duration>(std::chrono::steady_clock::now() - started);
  if (auto c = journal_.retry_later(e.id, error, failed_at); !c) spdlog::error("journal: {}", c.error());
  // Said once per action, when it has failed `failing_after` times in a row (it is still retried).
  if (const auto* current = journal_.find(e.id); current != nullptr && current->attempts == failing_after_)
    notice(NoticeKind::action_failing, e,
           to_string(e.kind) + " failed " + std::to_string(current->attempts) + " times in a row: " + error,
           to_string(e.kind), now);
}

std::optional<WallTime> SlurmActions::next_due() const {
  auto due = journal_.next_due();
  // Nothing pending is carried out before Slurm is known to answer: no sooner than its next check.
  if (due && !slurm_ready_ && *due < next_slurm_check_) due = next_slurm_check_;
  if (auto look = follow_up_.next_due(); look && (!due || *look < *due)) due = look;
  if (const auto& own = journal_.own_drain(); own && own->share_look && (!due || *own->share_look < *due)) due = *own->share_look;
  return due;
}

bool SlurmActions::slurm_ready(WallTime now) {
  if (slurm_ready_) return true;
  if (now < next_slurm_check_) return false;
  // Every 5 s or a little sooner: daemons started together (a fleet-wide restart) while slurmctld is
  // away do not ask it all at once, every time, when it comes back.
  next_slurm_check_ = now + backoff_delay(1, kSlurmCheckEvery, kSlurmCheckEvery, slurm_check_rng_);
  auto info = slurm_.node(node_);
  if (info) {
    slurm_ready_ = true;
    spdlog::info("slurmctld answers and knows node {} ({}){}", node_, info->state,
                 slurm_problem_.empty() ? "" : "; carrying out the pending actions");
    slurm_problem_.clear();
    return true;
  }
  std::string problem =
      gone(info.error())
          ? "slurmctld knows no node '" + node_ + "' (" + info.error().message +
                "): set [daemon] node_name to this host's NodeName in slurm.conf; healthd drains and requeues "
                "nothing until the name is known, and asks again every 5 s"
          : "slurmctld is not answering (" + info.error().message +
                "); healthd drains and requeues nothing until it answers, and asks again every 5 s";
  if (problem != slurm_problem_) spdlog::error("{}", problem);
  slurm_problem_ = problem;
  return false;
}

void raise_notice(const ExecutorServices& services, NoticeKind kind, const JournalEntry& e, std::string message,
                  std::string action, WallTime now) {
  if (services.notices == nullptr) return;
  Notice n;
  n.kind = kind;
  n.at = now;
  n.node = e.node.empty() ? services.node : e.node;
  n.job_id = e.job_id;
  if (auto owner = services.owners.find(e.job_id); e.job_id != 0 && owner != services.owners.end()) n.uid = owner->second;
  if (e.admin) {
    n.uid = e.by_uid;  // the admin who asked, and which request this answers
    n.request = e.request;
  }
  n.attempt = e.restart_count;
  n.code = e.code;
  n.message = sanitize(message, 1000);
  n.action = std::move(action);
  services.notices->notify(n);
}

void SlurmActions::notice(NoticeKind kind, const JournalEntry& e, std::string message, std::string action, WallTime now) {
  raise_notice(services(), kind, e, std::move(message), std::move(action), now);
}

ExecutorServices SlurmActions::services() {
  return {node_,     policy_, slurm_,  journal_, timeline_,   notices_,
          owners_,   programs_, resets_, memory_,  follow_up_, boot_id_, jobs_here_};
}

void SlurmActions::notice_done(const JournalEntry& e, const Carried& carried, WallTime now) {
  const auto& done = carried.acted;
  const auto& admin_outcome = carried.admin_outcome;
  if (e.admin) {
    const std::string what = e.kind == Action::drain ? "drain" : "resume";
    notice(NoticeKind::admin, e,
           done ? (e.kind == Action::drain ? "drained by an admin through healthctl: " + e.reason
                                           : std::string("resumed by an admin through healthctl") + (e.force ? " (--force)" : ""))
                : "admin " + what + ": " + (admin_outcome.empty() ? std::string("nothing to do") : admin_outcome),
           done ? what : "none", now);
    return;
  }
  if (!done) return;
  switch (*done) {
    case Action::drain:
    case Action::reboot: notice(NoticeKind::drain, e, e.reason, to_string(*done), now); break;
    case Action::requeue:
      notice(NoticeKind::requeue, e,
             "job " + std::to_string(e.job_id) + " requeued (attempt " + std::to_string(e.restart_count + 2) + ") after " +
                 e.code + " on " + e.node + (carried.detail.empty() ? "" : "; " + carried.detail),
             "requeue", now);
      break;
    case Action::resume:
      notice(NoticeKind::node_returned, e, "node " + e.node + " passed its checks again: returned to service", "resume", now);
      break;
    case Action::signal: notice(NoticeKind::signal, e, "SIG" + e.reason + " sent to checkpoint before " + e.code, "signal", now); break;
    case Action::reset_gpu: {
      const auto& own = journal_.own_drain();
      cure_notice(services(), own && own->cure ? own->cure->last + "; judging the node again" : std::string("GPU reset"), Action::reset_gpu, now);
      break;
    }
    case Action::replace: cure_notice(services(), "replacement requested: " + e.reason, Action::replace, now); break;
    default: break;
  }
  if (e.kind == Action::requeue && !follow_up_.following(e.job_id))
    owners_.erase(e.job_id);
}

void SlurmActions::follow_requeued(WallTime now) { follow_up_.look(services(), now); }

void SlurmActions::add_status(nlohmann::json& j) const {
  if (!memory_.overridden.empty())
    j["admin_override"] = "node " + node_ + " is in service while " + memory_.overridden +
                          " persists: auto-resume jobs are not requeued onto it";
  if (!memory_.withheld.empty()) j["drain_withheld"] = memory_.withheld;
  if (!slurm_problem_.empty()) j["slurm"] = slurm_problem_;
}

}  // namespace ar::healthd
