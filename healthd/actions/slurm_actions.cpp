#include "slurm_actions.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <system_error>

#include <spdlog/spdlog.h>

#include "auto_resume/job_comment.hpp"
#include "config/fields.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {


// The priority a requeued job waits with under requeue_priority = "top": the largest slurmctld
// accepts (NO_VAL and INFINITE above it mean "no change" and "Slurm's own").
constexpr std::uint32_t kTopPriority = 0xfffffffd;

// While Slurm has not answered once or does not know this node: how often to ask again.
constexpr auto kSlurmCheckEvery = std::chrono::seconds(5);

// After a drain has taken, when to rank it against the others once more (settle_share); why 2 s:
// policy/requeue_policy.hpp.
using policy::kShareSettle;

// Slurm reasons are one line; keep them short enough to read in sinfo -R, cut between characters
// (never inside one: a cut UTF-8 sequence is what made state writes throw).
std::string short_reason(std::string reason) { return truncate_utf8(std::move(reason), 240); }

}  // namespace

SlurmActions::SlurmActions(std::string node, PolicyConfig policy, SlurmClient& slurm, Journal& journal, Timeline& timeline,
                           HookRunner run_hook)
    : node_(std::move(node)), policy_(std::move(policy)), slurm_(slurm), journal_(journal), timeline_(timeline),
      run_hook_(std::move(run_hook)) {}

void SlurmActions::run_due(WallTime now) {
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
  if (!slurm_ready(now)) return;
  settle_share(now);
  // Copy: carrying out an entry changes the journal. Checkpoint signals first (the job checkpoints
  // before anything else happens to it), then drains: a requeue waits for its node's drain, so in
  // one pass the drain lands and the requeue follows it at once.
  auto due = journal_.pending();
  auto rank = [](const JournalEntry& e) { return e.kind == Action::signal ? 0 : e.kind == Action::drain ? 1 : 2; };
  std::stable_sort(due.begin(), due.end(), [&](const JournalEntry& a, const JournalEntry& b) { return rank(a) < rank(b); });
  for (const auto& e : due) {
    if (e.next_try > now) continue;
    if (!journal_.find(e.id)) continue;  // finished meanwhile by another entry's step
    std::expected<bool, std::string> r;
    acted_.reset();
    admin_outcome_.clear();
    const auto started = std::chrono::steady_clock::now();
    switch (e.kind) {
      case Action::drain: r = do_drain(e, now); break;
      case Action::requeue: r = do_requeue(e, now); break;
      case Action::resume: r = do_resume(e, now); break;
      case Action::signal: r = do_signal(e, now); break;
      case Action::annotate: {
        auto c = annotate(e.job_id, e.reason);
        r = c ? std::expected<bool, std::string>(true) : std::unexpected(c.error());
        break;
      }
      case Action::hook: r = do_hook(e, now); break;
      case Action::reset_gpu: r = do_reset(e, now); break;
      case Action::replace: r = do_replace(e, now); break;
      case Action::deep_check: r = do_deep_check(e, now); break;
      default:
        // What a fault calls for (warn, reboot, ...) is never a journal entry of its own; one read from
        // a journal written by hand is dropped, not retried forever.
        spdlog::error("journal: entry {} has kind {}, which is not carried out; dropped", e.id, to_string(e.kind));
        r = true;
        break;
    }
    if (r && *r) {
      // A requeue carried out by us got past its requeue step (in this pass or an earlier one).
      auto done = acted_;
      if (const auto* current = journal_.find(e.id); e.kind == Action::requeue && current != nullptr &&
                                                      current->step >= RequeueStep::annotate)
        done = Action::requeue;
      if (done) queue_hooks(e, *done, now);  // journalled before the entry is marked done: never lost
      notice_done(e, done, now);
      if (auto c = journal_.complete(e.id); !c) spdlog::error("journal: {}", c.error());
      continue_cure(now);
    } else if (!r) {
      spdlog::warn("{} {}{}: will retry: {}", to_string(e.kind), e.job_id ? "job " + std::to_string(e.job_id) : "node ",
                   e.job_id ? "" : e.node, r.error());
      // The wait runs from the failure, not from before the call: a call to a slurmctld that is down
      // or hung takes up to [slurm] timeout_s (libslurm retries its connection for about 9 s), so
      // waits of 2, 4 and 8 s counted from before it were over when it failed, and every daemon
      // asked again at once, for as long as slurmctld was away (bench/outage.sh).
      const WallTime failed_at = now + std::chrono::duration_cast<WallTime::duration>(std::chrono::steady_clock::now() - started);
      if (auto c = journal_.retry_later(e.id, r.error(), failed_at); !c) spdlog::error("journal: {}", c.error());
      // Said once per action, when it has failed `failing_after` times in a row (it is still retried).
      if (const auto* current = journal_.find(e.id); current != nullptr && current->attempts == failing_after_)
        notice(NoticeKind::action_failing, e,
               to_string(e.kind) + " failed " + std::to_string(current->attempts) + " times in a row: " + r.error(),
               to_string(e.kind), now);
    }
    // false: the action waits for something and has set its next try itself.
  }
}

std::optional<WallTime> SlurmActions::next_due() const {
  auto due = journal_.next_due();
  // Nothing pending is carried out before Slurm is known to answer: no sooner than its next check.
  if (due && !slurm_ready_ && *due < next_slurm_check_) due = next_slurm_check_;
  for (const auto& f : followed_)
    if (!due || f.next_look < *due) due = f.next_look;
  for (const auto& n : nudges_)
    if (!due || n.at < *due) due = n.at;
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

std::expected<void, std::string> SlurmActions::annotate(std::uint32_t job_id, const std::string& line,
                                                     const std::optional<std::string>& current) {
  std::string existing;
  if (current) {
    existing = *current;
  } else {
    auto job = slurm_.job(job_id);
    if (!job) {
      if (gone(job.error())) return {};  // nothing left to say it to
      return std::unexpected(job.error().message);
    }
    existing = job->admin_comment;
  }
  JobUpdate u;
  u.admin_comment = merge_admin_comment(existing, line);
  if (auto r = slurm_.update_job(job_id, u); !r && !gone(r.error())) return std::unexpected("admin comment: " + r.error().message);
  return {};
}

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
  // Where the share may hold the drain back, the whole table is read at once: the node's own record
  // is in it, and one read serves every partition the node is in.
  const bool judge_share = share_applies(e);
  std::optional<TableView> view;
  if (judge_share) {
    auto v = read_table(e.node);
    if (!v) return std::unexpected(v.error());
    view = std::move(*v);
  } else {
    auto n = slurm_.node(e.node);
    if (!n) return std::unexpected(n.error().message);
    view = TableView{{}, std::move(*n)};
  }
  const NodeInfo& info = view->self;
  const bool ranked = judge_share && !info.partitions.empty();  // our drain is ranked after it takes
  if (info.drained_or_draining()) {
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
  // Never take out more than the allowed share of any partition this node is in.
  if (judge_share) {
    if (auto over = policy::share_exceeded(view->table, info, false, policy_.max_drained_share); !over.empty()) {
      withheld_ = "drain of " + e.node + " withheld: " + over;
      spdlog::error("{}; fault: {}", withheld_, e.reason);
      return true;
    }
  }
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
  std::vector<std::string> burst;
  if (ranked) {
    // The daemons of other nodes hit by the same event (a fabric-wide fault) looked at the partition in
    // the same instant and each saw room for one more drain. Looked at again with the drains in place,
    // the ones past the share give theirs back, before their jobs are requeued; a failed look or
    // resume keeps the drain (one node too many out beats a faulty node in service by mistake). Drains
    // of the same second still landing are ranked by settle_share once that second is over.
    auto again = read_table(e.node);
    auto given_back = again ? give_back_past_share(*again)
                            : std::expected<std::optional<std::string>, std::string>(std::unexpected(again.error()));
    if (!given_back) spdlog::error("node {}: {}", e.node, given_back.error());
    if (given_back && *given_back) {
      spdlog::error("{}; fault: {}", **given_back, e.reason);
      return true;
    }
    // A failed look keeps the drain and goes on as without a share: the requeue does not wait.
    if (again) burst = policy::burst_around(again->table, again->self);
  }
  withheld_.clear();
  own_drain_from(e, rebooting, reboot_error, now, cannot_reboot, reboot_later);
  if (ranked) {
    journal_.own_drain()->share_look = now + kShareSettle;
    journal_.own_drain()->burst = std::move(burst);
  }
  acted_ = rebooting ? Action::reboot : Action::drain;  // what was done, not what was meant
  return true;
}

std::expected<bool, std::string> SlurmActions::do_requeue(const JournalEntry& e, WallTime now) {
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) {
      spdlog::info("job {} is gone; nothing to requeue", e.job_id);
      return true;
    }
    return std::unexpected(job.error().message);
  }
  owners_[e.job_id] = job->user_id;
  switch (e.step) {
    case RequeueStep::decide: return requeue_decide(e, *job, now);
    case RequeueStep::requeue: return requeue_ask(e, *job, now);
    case RequeueStep::annotate: return requeue_annotate(e, now);
    case RequeueStep::release: return requeue_release(e, now);
  }
  return true;
}

std::expected<bool, std::string> SlurmActions::next_step(const JournalEntry& e, RequeueStep step, WallTime now) {
  if (auto r = journal_.advance(e.id, step); !r) return std::unexpected("journal: " + r.error());
  JournalEntry next = e;
  next.step = step;
  switch (step) {
    case RequeueStep::decide: break;
    case RequeueStep::requeue: {
      auto job = slurm_.job(e.job_id);
      if (!job) return std::unexpected(job.error().message);
      return requeue_ask(next, *job, now);
    }
    case RequeueStep::annotate: return requeue_annotate(next, now);
    case RequeueStep::release: return requeue_release(next, now);
  }
  return true;
}

// A requeue for a fault of this node goes ahead only once the node is out of service (drained,
// draining or to be rebooted), so the job cannot start again on it. Answers why not, or nothing.
std::expected<std::optional<std::string>, std::string> SlurmActions::node_still_schedulable(const JournalEntry& e) {
  if (e.code == kAppFailure || e.code == kStall) return std::optional<std::string>();  // the node is healthy: nothing to wait for
  auto info = slurm_.node(node_);
  if (!info) return std::unexpected(info.error().message);
  if (info->drained_or_draining() || info->reboot_pending()) return std::optional<std::string>();
  return std::optional<std::string>("node " + node_ + " is " + (info->state.empty() ? "in service" : info->state) +
                                    (info->reason.empty() ? "" : " (" + sanitize(info->reason, 120) + ")"));
}

policy::RequeueFacts SlurmActions::requeue_facts(const JournalEntry& e, const JobInfo& job, WallTime now) const {
  policy::RequeueFacts f;
  f.code = e.code;
  f.attempt = e.restart_count;
  f.user_cap = e.cap;
  f.rerun_step = e.rerun_step.has_value();
  f.job_restart_count = job.restart_count;
  f.job_state = job.state;
  f.job_requeue = job.requeue;
  f.job_nodes = job.nodes;
  f.step_reruns = step_reruns_so_far(job);
  f.rerun_asked_elsewhere =
      e.rerun_step && asks_step_rerun(parse_attempt_comment(auto_resume_line(job.admin_comment)), *e.rerun_step, job.restart_count);
  f.max_resumes = policy_.max_resumes;
  f.stall_action = policy_.stall_action;
  f.node = node_;
  for (const auto& d : journal_.pending())
    if (d.kind == Action::drain && d.node == node_) {
      f.drain_pending = d.next_try;
      break;
    }
  if (const auto& own = journal_.own_drain()) {
    f.own_drain = true;
    f.share_look = own->share_look;
    f.burst = own->burst;
  }
  f.now = now;
  return f;
}

// The decision is policy/requeue_policy's; what is here carries it out.
std::expected<bool, std::string> SlurmActions::requeue_decide(const JournalEntry& e, const JobInfo& job, WallTime now) {
  using policy::RequeueVerdict;
  const auto facts = requeue_facts(e, job, now);
  auto d = policy::decide_requeue(facts);
  std::optional<std::string> in_service;  // look_at_node: why the node is still schedulable, if it is
  if (d.verdict == RequeueVerdict::look_at_node) {
    auto schedulable = node_still_schedulable(e);
    if (!schedulable) return std::unexpected(schedulable.error());
    in_service = *schedulable;
    d = policy::after_node_look(facts, in_service.has_value());
  }
  switch (d.verdict) {
    case RequeueVerdict::requeued_elsewhere:
      // Another node's healthd requeued this attempt already (its daemon releases and annotates).
      journal_.mark_requeued(e.job_id, e.restart_count);
      timeline_.record(e.job_id, {now, node_, "requeued elsewhere", "attempt " + std::to_string(e.restart_count + 1) +
                                                                        " was already requeued"});
      follow(e.job_id, e.restart_count + 1, now);
      return true;
    case RequeueVerdict::stall_not_running:
      journal_.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
      timeline_.record(e.job_id, {now, node_, "stall: nothing done", "the job is " + job.state + " now"});
      return true;
    case RequeueVerdict::cap_reached: return resume_cap_reached(e, job, d, now);
    case RequeueVerdict::leave_pending: return true;
    case RequeueVerdict::stall_cancel: return stall_cancel(e, job, now);
    case RequeueVerdict::refuse: return refuse_requeue(e, job, now);
    case RequeueVerdict::wait_for_drain:
      journal_.wait_until(e.id, d.until, "waiting for the drain of " + node_);
      return false;
    case RequeueVerdict::wait_for_share_look:
      journal_.wait_until(e.id, d.until, "waiting for the second look at max_drained_share (drains in a burst)");
      return false;
    case RequeueVerdict::look_at_node: break;  // answered above
    case RequeueVerdict::not_requeued: return leave_on_fault(e, in_service.value_or(""), now);
    case RequeueVerdict::try_rerun: {
      auto rerun = rerun_step(e, job, now);
      if (!rerun) return std::unexpected(rerun.error());
      if (!*rerun) return true;  // the step runs again inside the allocation
      if (!(*rerun)->empty())
        timeline_.record(e.job_id, {now, node_, "not re-run in the allocation", **rerun + "; the job is requeued instead"});
      if (policy::after_rerun_declined(facts).verdict == RequeueVerdict::refuse) return refuse_requeue(e, job, now);
      break;
    }
    case RequeueVerdict::requeue: break;
  }
  return next_step(e, RequeueStep::requeue, now);
}

// The job ends as it would have without auto-resume: said where the user and the admin look, and a
// job still running on a faulty node (or stalled) is cancelled, as it would hold its allocation forever.
std::expected<bool, std::string> SlurmActions::resume_cap_reached(const JournalEntry& e, const JobInfo& job,
                                                                  const policy::RequeueDecision& d, WallTime now) {
  std::string why = "auto-resume: not resumed: the cap of " + std::to_string(d.cap) +
                    " resumes is reached (last failure: " + e.code + " on " + node_ + ")";
  spdlog::error("job {}: {}", e.job_id, why);
  if (auto r = annotate(e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  if (d.cancel) {
    if (auto r = slurm_.cancel(e.job_id); !r && !gone(r.error())) return std::unexpected(r.error().message);
    why += e.code == kStall ? "; the job, making no progress, is cancelled"
                            : "; the job, still running on a faulty node, is cancelled";
  }
  journal_.mark_requeued(e.job_id, e.restart_count);  // decided: never again for this attempt
  timeline_.record(e.job_id, {now, node_, "resume cap reached", why});
  notice(NoticeKind::resume_cap, e, why, d.cancel ? "cancel" : "none", now);
  return true;
}

// Not drained although faulty: the job is left as it is, and said so (`why_in_service`: what Slurm
// showed of the node).
std::expected<bool, std::string> SlurmActions::leave_on_fault(const JournalEntry& e, const std::string& why_in_service,
                                                              WallTime now) {
  std::string why = why_in_service + " although " + e.code + " persists: " +
                    (withheld_.empty() ? "someone returned it to service, which overrides healthd"
                                       : "the drain was withheld (" + withheld_ + ")") +
                    "; not requeued, so it cannot restart onto the fault";
  if (overridden_ != e.code) spdlog::warn("node {}: {}", node_, why);
  overridden_ = e.code;
  journal_.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
  timeline_.record(e.job_id, {now, node_, "not requeued", why});
  return true;
}

std::expected<bool, std::string> SlurmActions::refuse_requeue(const JournalEntry& e, const JobInfo& job, WallTime now) {
  // Slurm would refuse ("Requested operation is presently disabled"), at every try. Said once, where
  // the user and the admin look, and decided for this attempt.
  std::string why = "auto-resume: not requeued after " + e.code + " on " + node_ +
                    ": the job does not allow requeue (submitted with --no-requeue, or JobRequeue=0 in "
                    "slurm.conf and no --requeue); submit it with --requeue to be resumed";
  spdlog::error("job {}: {}", e.job_id, why);
  if (auto r = annotate(e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  journal_.mark_requeued(e.job_id, e.restart_count);
  timeline_.record(e.job_id, {now, node_, "not requeued", why});
  return true;
}

// [policy] stall_action = "cancel": the stalled job ends, and its admin comment and timeline say why.
std::expected<bool, std::string> SlurmActions::stall_cancel(const JournalEntry& e, const JobInfo& job, WallTime now) {
  const std::string why = "auto-resume: cancelled: " + e.reason + " while its batch node checked healthy";
  if (auto r = annotate(e.job_id, why, job.admin_comment); !r) return std::unexpected(r.error());
  if (job.state == "RUNNING")
    if (auto r = slurm_.cancel(e.job_id); !r && !gone(r.error())) return std::unexpected(r.error().message);
  spdlog::warn("job {}: {}", e.job_id, why);
  journal_.mark_requeued(e.job_id, e.restart_count);  // decided for this attempt
  timeline_.record(e.job_id, {now, node_, "cancelled", why});
  return true;
}

std::expected<bool, std::string> SlurmActions::requeue_ask(const JournalEntry& e, const JobInfo& job, WallTime now) {
  // This step was saved before Slurm was asked: after a crash the job shows whether the ask landed.
  if (job.restart_count > e.restart_count) {
    journal_.mark_requeued(e.job_id, e.restart_count);
    timeline_.record(e.job_id, {now, node_, "requeued", "attempt " + std::to_string(e.restart_count + 2) + " after " +
                                                            e.code + " on " + node_ + " (seen requeued after a restart)"});
    return next_step(e, RequeueStep::annotate, now);
  }
  auto r = slurm_.requeue(e.job_id);
  if (!r) {
    // slurmctld refuses a second requeue of the same job: whoever raced us won. Check who.
    auto again = slurm_.job(e.job_id);
    if (again && again->restart_count > e.restart_count) {
      journal_.mark_requeued(e.job_id, e.restart_count);
      timeline_.record(e.job_id, {now, node_, "requeued elsewhere", r.error().message});
      follow(e.job_id, e.restart_count + 1, now);
      return true;
    }
    if (gone(r.error())) return true;  // ended meanwhile: nothing to requeue
    return std::unexpected(r.error().message);
  }
  journal_.mark_requeued(e.job_id, e.restart_count);
  timeline_.record(e.job_id, {std::chrono::system_clock::now(), node_, "requeued",
                              "attempt " + std::to_string(e.restart_count + 2) + " after " + e.code + " on " + node_});
  return next_step(e, RequeueStep::annotate, now);
}

std::expected<bool, std::string> SlurmActions::requeue_annotate(const JournalEntry& e, WallTime now) {
  // Before the release: the restarted job reads why its last attempt ended from the admin comment.
  // The attempt counts the job's step re-runs too, and the line keeps their number.
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;
    return std::unexpected(job.error().message);
  }
  const std::uint32_t reruns = step_reruns_so_far(*job);
  std::string line = format_attempt_comment({e.restart_count + reruns + 1, e.code, node_, e.reason, std::nullopt, 0, reruns});
  if (auto c = annotate(e.job_id, line, job->admin_comment); !c) return std::unexpected(c.error());
  return next_step(e, RequeueStep::release, now);
}

std::expected<bool, std::string> SlurmActions::requeue_release(const JournalEntry& e, WallTime now) {
  // Slurm holds a requeued job (Reason=BeginTime) for minutes. A new begin time lifts it, but only once
  // the job has left COMPLETING: set earlier, slurmctld overrides it when the job's epilog completes
  // (batch_requeue_fini). So wait for PENDING first, as a journal wait (the engine stays free, and a
  // restart picks the wait up again).
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;
    return std::unexpected(job.error().message);
  }
  if (job->state == "COMPLETING" || job->state == "REQUEUED") {
    auto& waits = release_waits_[e.id];
    ++waits;
    // Every 50 ms for the first 5 s (it takes about 0.15 s), then every second: a job whose node
    // never reports the kill must not keep the engine busy; Slurm's own hold ends in minutes anyway.
    journal_.wait_until(e.id, now + (waits < 100 ? std::chrono::milliseconds(50) : std::chrono::milliseconds(1000)),
                        "waiting for job " + std::to_string(e.job_id) + " to leave " + job->state);
    return false;
  }
  release_waits_.erase(e.id);
  const bool raise = policy_.requeue_priority == RequeuePriority::top;
  follow(e.job_id, e.restart_count + 1, now, raise && job->state == "PENDING");
  if (job->state != "PENDING") return true;  // running again already, or ended: nothing to release
  auto schedulable = node_still_schedulable(e);
  if (!schedulable) return std::unexpected(schedulable.error());
  if (*schedulable) {
    timeline_.record(e.job_id, {std::chrono::system_clock::now(), node_, "hold kept",
                                **schedulable + ": the job is not released early onto it"});
    return true;
  }
  // The begin time: one second after the requeue's kill, on slurmctld's clock. slurmd refuses to
  // launch a job whose credential is not newer (in whole seconds) than the kill it revoked ("already
  // killed, do not launch batch job"). slurmctld stamped submit_time when the job left COMPLETING,
  // after the kill, so submit_time + 1 is always safe, and needs no agreement between clocks.
  const std::time_t begin = std::chrono::system_clock::to_time_t(job->submit_time) + 1;
  JobUpdate u;
  u.begin = begin;
  if (raise) u.priority = kTopPriority;
  if (auto r = slurm_.update_job(e.job_id, u); !r) {
    if (gone(r.error())) return true;
    return std::unexpected("releasing the requeue hold: " + r.error().message);
  }
  // slurmctld schedules an updated job in its next queued pass, and skips it there while that begin
  // second has not come; nothing else would queue another pass until the periodic ones (backfill
  // every 30 s, the full pass every 60 s by default). So just after the begin second the job is
  // updated again with the same begin time, which queues one more pass: while Slurm still gives
  // BeginTime as its reason, once at begin + 0.1 s and at most twice more a second apart (this
  // node's clock may run ahead of slurmctld's).
  nudges_.push_back({e.job_id, e.restart_count + 1, begin,
                     std::chrono::system_clock::from_time_t(begin) + std::chrono::milliseconds(100), 3});
  timeline_.record(e.job_id, {std::chrono::system_clock::now(), node_, "hold released",
                              std::string("eligible from slurmctld's next second") +
                                  (raise ? "; top priority until it runs (requeue_priority = \"top\")" : "")});
  return true;
}

void SlurmActions::follow(std::uint32_t job_id, std::uint32_t attempt, WallTime now, bool raised_priority) {
  for (auto& f : followed_)
    if (f.job_id == job_id && f.restart_count == attempt) {
      f.raised_priority = f.raised_priority || raised_priority;
      return;
    }
  followed_.push_back({job_id, attempt, now, now, raised_priority});
}

void SlurmActions::notice(NoticeKind kind, const JournalEntry& e, std::string message, std::string action, WallTime now) {
  if (notices_ == nullptr) return;
  Notice n;
  n.kind = kind;
  n.at = now;
  n.node = e.node.empty() ? node_ : e.node;
  n.job_id = e.job_id;
  if (auto owner = owners_.find(e.job_id); e.job_id != 0 && owner != owners_.end()) n.uid = owner->second;
  if (e.admin) {
    n.uid = e.by_uid;  // the admin who asked, and which request this answers
    n.request = e.request;
  }
  n.attempt = e.restart_count;
  n.code = e.code;
  n.message = sanitize(message, 1000);
  n.action = std::move(action);
  notices_->notify(n);
}

void SlurmActions::notice_done(const JournalEntry& e, std::optional<Action> done, WallTime now) {
  if (e.admin) {
    const std::string what = e.kind == Action::drain ? "drain" : "resume";
    notice(NoticeKind::admin, e,
           done ? (e.kind == Action::drain ? "drained by an admin through healthctl: " + e.reason
                                           : std::string("resumed by an admin through healthctl") + (e.force ? " (--force)" : ""))
                : "admin " + what + ": " + (admin_outcome_.empty() ? std::string("nothing to do") : admin_outcome_),
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
                 e.code + " on " + e.node,
             "requeue", now);
      break;
    case Action::resume:
      notice(NoticeKind::node_returned, e, "node " + e.node + " passed its checks again: returned to service", "resume", now);
      break;
    case Action::signal: notice(NoticeKind::signal, e, "SIG" + e.reason + " sent to checkpoint before " + e.code, "signal", now); break;
    case Action::reset_gpu: {
      const auto& own = journal_.own_drain();
      cure_notice(own && own->cure ? own->cure->last + "; judging the node again" : std::string("GPU reset"), Action::reset_gpu, now);
      break;
    }
    case Action::replace: cure_notice("replacement requested: " + e.reason, Action::replace, now); break;
    default: break;
  }
  if (e.kind == Action::requeue && std::none_of(followed_.begin(), followed_.end(), [&](const Followed& f) { return f.job_id == e.job_id; }))
    owners_.erase(e.job_id);
}

void SlurmActions::follow_requeued(WallTime now) {
  // The scheduler nudges first (see requeue_release): one update each, of a job still waiting.
  std::erase_if(nudges_, [&](Nudge& n) {
    if (now < n.at) return false;
    auto job = slurm_.job(n.job_id);
    if (!job) return gone(job.error()) || --n.left <= 0;
    // Any other reason (Priority, Resources): slurmctld has judged it eligible; the queue does the rest.
    if (job->restart_count != n.restart_count || job->state != "PENDING" || job->reason != "BeginTime") return true;
    JobUpdate u;
    u.begin = n.begin;
    if (auto r = slurm_.update_job(n.job_id, u); !r)
      spdlog::debug("job {}: asking slurmctld to schedule it again: {}", n.job_id, r.error().message);
    n.at = now + std::chrono::seconds(1);
    return --n.left <= 0;
  });
  std::erase_if(followed_, [&](Followed& f) {
    if (now < f.next_look) return false;
    auto after_requeue = [&](WallTime t) {
      char when[64];
      std::snprintf(when, sizeof when, "%.1f s after the requeue", std::chrono::duration<double>(t - f.since).count());
      return std::string(when);
    };
    const auto waited = now - f.since;
    // The start time comes from Slurm itself, so looking often buys nothing: once a second while a
    // restart is expected (seconds), then every 5 s, then every 30 s. Following one job for its ten
    // minutes costs about 40 Slurm reads.
    f.next_look = now + (waited < std::chrono::seconds(10)   ? std::chrono::milliseconds(1000)
                         : waited < std::chrono::seconds(60) ? std::chrono::milliseconds(5000)
                                                             : std::chrono::milliseconds(30000));
    auto job = slurm_.job(f.job_id);
    if (!job) return gone(job.error()) || waited > std::chrono::minutes(10);
    if (job->restart_count < f.restart_count) return waited > std::chrono::minutes(10);
    // start_time is slurmctld's, in whole seconds: one within the second before the requeue is this run.
    const bool started_since = job->start_time >= f.since - std::chrono::seconds(1);
    // COMPLETING is a run only when the run ended (a short attempt between two looks): a requeued job
    // whose last attempt is still ending is PENDING underneath, with the scheduler's expected start in
    // start_time (seen at 128 nodes: "running again" 4 s before it did, and its node returned early).
    const bool ran = job->state == "RUNNING" || job->state == "CONFIGURING" ||
                     (job->state == "COMPLETING" && !job->pending && started_since);
    if (ran) {
      const auto started = started_since ? std::max(job->start_time, f.since) : std::chrono::system_clock::now();
      timeline_.record(f.job_id, {started, node_, "running again", "on " + job->node_list + ", " + after_requeue(started)});
      JournalEntry about;
      about.node = node_;
      about.job_id = f.job_id;
      about.restart_count = f.restart_count;
      owners_[f.job_id] = job->user_id;
      notice(NoticeKind::resumed, about, "running again on " + job->node_list + ", " + after_requeue(started), "none", now);
      if (f.raised_priority) {
        // Back to the priority Slurm computes (INFINITE), so a later requeue by anyone else, or the
        // next job of this user, does not inherit the jump.
        JobUpdate u;
        u.reset_priority = true;
        if (auto r = slurm_.update_job(f.job_id, u); !r && !gone(r.error()))
          spdlog::warn("job {}: its top priority could not be set back: {}", f.job_id, r.error().message);
      }
      return true;
    }
    if (job->state == "PENDING" || job->state == "COMPLETING" || job->state == "REQUEUED") {
      if (waited > std::chrono::minutes(10)) {
        timeline_.record(f.job_id, {std::chrono::system_clock::now(), node_, "not running again",
                                    "still " + job->state + " (" + job->reason + ") 10 minutes after the requeue; no longer followed" +
                                        (f.raised_priority ? "; it keeps its top priority until it runs" : "")});
        return true;
      }
      return false;
    }
    // Ended without healthd seeing it run again (it may have run briefly between two looks).
    const auto ended = std::chrono::system_clock::now();
    timeline_.record(f.job_id, {ended, node_, "ended",
                                job->state + (job->node_list.empty() ? "" : " on " + job->node_list) + ", " +
                                    after_requeue(ended) + ", without being seen running again"});
    return true;
  });
  // Owners are kept while their job is followed or has an entry pending, for the notices.
  std::erase_if(owners_, [&](const auto& owner) {
    return std::none_of(followed_.begin(), followed_.end(), [&](const Followed& f) { return f.job_id == owner.first; }) &&
           std::none_of(journal_.pending().begin(), journal_.pending().end(),
                        [&](const JournalEntry& e) { return e.job_id == owner.first; });
  });
}

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

std::expected<bool, std::string> SlurmActions::do_signal(const JournalEntry& e, WallTime now) {
  if (journal_.signalled(e.job_id, e.restart_count)) return true;
  auto job = slurm_.job(e.job_id);
  if (!job) {
    if (gone(job.error())) return true;  // gone: nothing to checkpoint
    return std::unexpected(job.error().message);
  }
  owners_[e.job_id] = job->user_id;
  // Requeued or ended meanwhile: the attempt that was to checkpoint is over.
  if (job->restart_count != e.restart_count || job->state != "RUNNING") return true;
  const std::string& signal = e.reason;
  if (auto r = slurm_.signal_job(e.job_id, signal); !r) return std::unexpected(r.error().message);
  acted_ = Action::signal;
  // Marked once sent: a crash before the journal is saved sends it again (at least once, never lost).
  journal_.mark_signalled(e.job_id, e.restart_count);
  spdlog::warn("job {}: SIG{} sent to checkpoint now ({} on {})", e.job_id, signal, e.code, node_);
  timeline_.record(e.job_id, {now, node_, "checkpoint signal",
                              "SIG" + signal + " to the batch script and every step: " + e.code + " on " + node_});
  return true;
}

std::expected<std::shared_ptr<SlurmActions::HookOutcome>, std::string> SlurmActions::run_in_background(
    std::vector<std::string> argv, std::vector<std::string> env, std::chrono::milliseconds timeout) {
  auto outcome = std::make_shared<HookOutcome>();
  // On a thread of its own: a program may take its whole timeout, and the engine must go on sweeping
  // and releasing requeued jobs meanwhile. Detached: at exit the process ends it, as it would a
  // child; its deadline bounds it otherwise.
  try {
    std::thread([outcome, runner = run_hook_, argv = std::move(argv), env = std::move(env), timeout] {
      std::expected<ProcessResult, std::string> r = std::unexpected(std::string("did not run"));
      try {
        r = runner ? runner(argv, env, timeout) : run_process(argv, timeout, 64 * 1024, env);
      } catch (const std::exception& ex) {
        r = std::unexpected(std::string(ex.what()));
      }
      std::lock_guard lock(outcome->mutex);
      outcome->result = std::move(r);
    }).detach();
  } catch (const std::system_error& ex) {
    return std::unexpected(std::string("no thread to run it on: ") + ex.what());
  }
  return outcome;
}

void SlurmActions::queue_hooks(const JournalEntry& done, Action what, WallTime now) {
  for (const auto& hook : policy_.hooks) {
    if (std::find(hook.on.begin(), hook.on.end(), what) == hook.on.end()) continue;
    // An action journalled before report_only was set is finished, but runs no admin program.
    if (policy_.report_only) {
      spdlog::warn("report only: would run hook {} after {} ({} on {}); nothing run", hook.name, to_string(what), done.code, done.node);
      continue;
    }
    JournalEntry e;
    e.kind = Action::hook;
    e.node = done.node;
    e.job_id = done.job_id;
    e.restart_count = done.restart_count;
    e.code = done.code;
    e.reason = done.reason;
    e.hook = hook.name;
    e.done = what;
    e.created = now;
    e.next_try = now;
    if (auto r = journal_.add(std::move(e)); !r) spdlog::error("journal: {}", r.error());
  }
}

std::expected<bool, std::string> SlurmActions::do_hook(const JournalEntry& e, WallTime now) {
  auto hook = std::find_if(policy_.hooks.begin(), policy_.hooks.end(), [&](const HookConfig& h) { return h.name == e.hook; });
  if (hook == policy_.hooks.end()) {
    spdlog::warn("hook '{}': no longer in the config; not run", sanitize(e.hook, 80));
    return true;
  }
  if (e.attempts >= hook->attempts) {
    spdlog::error("hook '{}' after {} on {}: gave up after {} tries: {}", hook->name, to_string(e.done), e.node, e.attempts,
                  e.last_error);
    if (e.job_id != 0)
      timeline_.record(e.job_id, {now, node_, "hook failed", hook->name + " after " + to_string(e.done) + ": " + e.last_error});
    return true;
  }
  auto running = running_hooks_.find(e.id);
  if (running == running_hooks_.end()) {
    std::vector<std::string> argv;
    for (const auto& word : hook->command) argv.push_back(expand_node_name(word, e.node));
    // The values come from Slurm and from check messages: one line each, no NUL (sanitize).
    std::vector<std::string> env = {"HEALTHD_ACTION=" + to_string(e.done), "HEALTHD_NODE=" + sanitize(e.node, 255),
                                    "HEALTHD_CODE=" + sanitize(e.code, 120), "HEALTHD_REASON=" + sanitize(e.reason, 1000),
                                    "HEALTHD_JOB_ID=" + std::to_string(e.job_id)};
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(hook->timeout);
    auto outcome = run_in_background(std::move(argv), std::move(env), timeout);
    if (!outcome) return std::unexpected("hook " + hook->name + ": " + outcome.error());
    running = running_hooks_.emplace(e.id, std::move(*outcome)).first;
  }
  std::optional<std::expected<ProcessResult, std::string>> run;
  {
    std::lock_guard lock(running->second->mutex);
    run = running->second->result;
  }
  if (!run) {
    journal_.wait_until(e.id, now + std::chrono::milliseconds(200), "hook " + hook->name + " running");
    return false;
  }
  running_hooks_.erase(running);
  if (!*run) return std::unexpected("hook " + hook->name + ": " + run->error());
  if ((*run)->timed_out)
    return std::unexpected("hook " + hook->name + ": no exit within " + std::to_string(hook->timeout.count()) + " s");
  if ((*run)->signaled || (*run)->exit_code != 0)
    return std::unexpected("hook " + hook->name + ": " +
                           ((*run)->signaled ? std::string("killed by a signal") : "exit " + std::to_string((*run)->exit_code)) +
                           ((*run)->err.empty() ? "" : ": " + sanitize((*run)->err, 200)));
  spdlog::info("hook '{}' ran after {} on {}", hook->name, to_string(e.done), e.node);
  if (e.job_id != 0) timeline_.record(e.job_id, {now, node_, "hook ran", hook->name + " after " + to_string(e.done)});
  return true;
}

void SlurmActions::add_status(nlohmann::json& j) const {
  if (!overridden_.empty())
    j["admin_override"] = "node " + node_ + " is in service while " + overridden_ +
                          " persists: auto-resume jobs are not requeued onto it";
  if (!withheld_.empty()) j["drain_withheld"] = withheld_;
  if (!slurm_problem_.empty()) j["slurm"] = slurm_problem_;
}

}  // namespace ar::healthd
