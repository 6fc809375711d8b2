#include "journal.hpp"

#include <algorithm>


#include "state/atomic_file.hpp"
#include "state/json_fields.hpp"

namespace ar::healthd {
namespace {

// The kinds of entry the journal holds. "comment" is how journals before the one action vocabulary
// named an annotate entry.
std::optional<Action> parse_kind(const std::string& s) {
  if (s == "comment") return Action::annotate;
  for (auto k : kEntryKinds)
    if (to_string(k) == s) return k;
  return std::nullopt;
}

// The name an entry's kind has in the file: an annotate entry keeps the name journals had before the
// one action vocabulary ("comment"), so a downgraded daemon still reads a journal this one wrote.
std::string kind_name(Action k) { return k == Action::annotate ? "comment" : to_string(k); }

using json_fields::integer;

std::pair<std::uint32_t, std::uint32_t> job_attempt(const nlohmann::json& pair, const char* what) {
  if (!pair.is_array() || pair.size() != 2) throw StateFieldError(std::string(what) + ": a [job, attempt] pair is expected");
  return {json_fields::integer_value<std::uint32_t>(pair[0], what), json_fields::integer_value<std::uint32_t>(pair[1], what)};
}

constexpr CureProgress::Phase kPhases[] = {CureProgress::Phase::pending, CureProgress::Phase::running,
                                           CureProgress::Phase::verifying, CureProgress::Phase::failed,
                                           CureProgress::Phase::exhausted, CureProgress::Phase::cannot_run};

}  // namespace

JournalEntry due_entry(Action kind, std::string node, std::string code, WallTime now) {
  JournalEntry e;
  e.kind = kind;
  e.node = std::move(node);
  e.code = std::move(code);
  e.created = now;
  e.next_try = now;
  return e;
}

std::string to_string(CureProgress::Phase p) {
  switch (p) {
    case CureProgress::Phase::pending: return "pending";
    case CureProgress::Phase::running: return "running";
    case CureProgress::Phase::verifying: return "verifying";
    case CureProgress::Phase::failed: return "failed";
    case CureProgress::Phase::exhausted: return "exhausted";
    case CureProgress::Phase::cannot_run: return "cannot_run";
  }
  return "pending";
}

std::string chain_text(const std::vector<Action>& chain) {
  if (chain.empty()) return "drain only";
  std::string out;
  for (auto a : chain) out += (out.empty() ? "" : " -> ") + to_string(a);
  return out;
}

nlohmann::json cure_to_json(const CureProgress& c) {
  nlohmann::json chain = nlohmann::json::array();
  for (auto a : c.chain) chain.push_back(to_string(a));
  return {{"chain", chain}, {"step", c.step}, {"phase", to_string(c.phase)}, {"since_ms", to_epoch_ms(c.since)},
          {"gpus", c.gpus}, {"boot_id", c.boot_id}, {"last", c.last}, {"deep_checked", c.deep_checked},
          {"jobs", c.jobs}};
}

CureProgress cure_from_json(const nlohmann::json& j) {
  CureProgress c;
  for (const auto& a : json_fields::array(j, "chain")) {
    auto step = a.is_string() ? parse_action(a.get<std::string>()) : std::nullopt;
    if (!step || std::find(std::begin(kCureSteps), std::end(kCureSteps), *step) == std::end(kCureSteps))
      throw StateFieldError("cure chain: " + a.dump() + " is not a cure step");
    c.chain.push_back(*step);
  }
  c.step = integer<std::uint32_t>(j, "step", 0, 16);
  const auto phase = j.at("phase").get<std::string>();
  auto it = std::find_if(std::begin(kPhases), std::end(kPhases), [&](auto p) { return to_string(p) == phase; });
  if (it == std::end(kPhases)) throw StateFieldError("cure phase '" + phase + "' is unknown");
  c.phase = *it;
  c.since = json_fields::time_ms(j, "since_ms");
  for (const auto& g : json_fields::array(j, "gpus")) c.gpus.push_back(g.get<std::string>());
  c.boot_id = j.at("boot_id").get<std::string>();
  c.last = j.at("last").get<std::string>();
  c.deep_checked = j.at("deep_checked").get<bool>();
  if (j.contains("jobs"))
    for (const auto& id : json_fields::array(j, "jobs")) c.jobs.push_back(json_fields::integer_value<std::uint32_t>(id, "jobs"));
  if (c.jobs.size() > 64) throw StateFieldError("cure: more than 64 jobs");
  return c;
}

std::expected<void, std::string> Journal::save() {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : pending_) {
    entries.push_back({{"id", e.id}, {"kind", kind_name(e.kind)}, {"node", e.node}, {"job_id", e.job_id},
                       {"restart_count", e.restart_count}, {"code", e.code}, {"reason", e.reason},
                       {"created_ms", to_epoch_ms(e.created)}, {"attempts", e.attempts}, {"next_try_ms", to_epoch_ms(e.next_try)},
                       {"last_error", e.last_error}});
    if (e.cap) entries.back()["cap"] = *e.cap;
    if (e.rerun_step) entries.back()["rerun_step"] = *e.rerun_step;
    if (!e.exclude.empty()) entries.back()["exclude"] = e.exclude;
    if (!e.suspects.empty()) entries.back()["suspects"] = e.suspects;
    if (e.reboot) entries.back()["reboot"] = true;
    if (e.held) entries.back()["held"] = true;
    if (e.admin) entries.back()["admin"] = true;
    if (e.force) entries.back()["force"] = true;
    if (e.by_uid) entries.back()["by_uid"] = *e.by_uid;
    if (e.request != 0) entries.back()["request"] = e.request;
    if (e.cure) entries.back()["cure"] = cure_to_json(*e.cure);
    if (e.kind == Action::hook) {
      entries.back()["hook"] = e.hook;
      entries.back()["done"] = to_string(e.done);
    }
    if (e.step != RequeueStep::decide) entries.back()["step"] = static_cast<int>(e.step);
  }
  nlohmann::json requeued = nlohmann::json::array();
  for (const auto& [job, restart] : requeued_) requeued.push_back({job, restart});
  nlohmann::json signalled = nlohmann::json::array();
  for (const auto& [job, restart] : signalled_) signalled.push_back({job, restart});
  nlohmann::json history = nlohmann::json::array();
  for (const auto& t : fault_history_) history.push_back(to_epoch_ms(t));
  nlohmann::json j = {{"version", 1}, {"next_id", next_id_}, {"pending", entries}, {"requeued", requeued},
                      {"fault_history_ms", history}, {"signalled", signalled}};
  if (!suspicions_.empty()) {
    nlohmann::json s = nlohmann::json::array();
    for (const auto& x : suspicions_)
      s.push_back({{"at_ms", to_epoch_ms(x.at)}, {"job_id", x.job_id}, {"uid", x.uid}, {"why", x.why}});
    j["suspicions"] = s;
  }
  if (own_drain_)
    j["own_drain"] = {{"code", own_drain_->code}, {"reason", own_drain_->reason}, {"at_ms", to_epoch_ms(own_drain_->at)},
                      {"held", own_drain_->held}, {"reboot", own_drain_->reboot}};
  if (own_drain_ && own_drain_->cure) j["own_drain"]["cure"] = cure_to_json(*own_drain_->cure);
  if (own_drain_ && own_drain_->share_look) j["own_drain"]["share_look_ms"] = to_epoch_ms(*own_drain_->share_look);
  auto r = write_file_atomically(file_, dump_state(j));
  durable_ = r.has_value();
  return r;
}

std::expected<void, std::string> Journal::make_durable() {
  if (durable_) return {};
  return save();
}

namespace {

// One pending entry of a journal file. Throws on a missing or ill-typed field (load() says which
// file); answers an error for an action kind this version does not know.
std::expected<JournalEntry, std::string> entry_from_json(const nlohmann::json& ej) {
  JournalEntry e;
  e.id = integer<std::uint64_t>(ej, "id");
  auto kind = parse_kind(ej.at("kind").get<std::string>());
  if (!kind) return std::unexpected("unknown action kind " + ej.at("kind").dump());
  e.kind = *kind;
  e.node = ej.at("node").get<std::string>();
  e.job_id = integer<std::uint32_t>(ej, "job_id");
  e.restart_count = integer<std::uint32_t>(ej, "restart_count");
  e.code = ej.at("code").get<std::string>();
  e.reason = ej.at("reason").get<std::string>();
  e.created = json_fields::time_ms(ej, "created_ms");
  e.attempts = integer<std::uint32_t>(ej, "attempts");
  e.next_try = json_fields::time_ms(ej, "next_try_ms");
  e.last_error = ej.at("last_error").get<std::string>();
  e.cap = json_fields::optional_integer<std::uint32_t>(ej, "cap");
  e.rerun_step = json_fields::optional_integer<std::uint32_t>(ej, "rerun_step");
  if (ej.contains("exclude"))
    for (const auto& n : json_fields::array(ej, "exclude")) {
      if (!n.is_string() || n.get_ref<const std::string&>().empty() || n.get_ref<const std::string&>().size() > 255)
        throw StateFieldError("key 'exclude': node names must be non-empty strings of at most 255 bytes");
      e.exclude.push_back(n.get<std::string>());
    }
  if (ej.contains("suspects")) e.suspects = ej.at("suspects").get<std::string>();
  e.reboot = ej.value("reboot", false);
  e.held = ej.value("held", false);
  e.admin = ej.value("admin", false);
  e.force = ej.value("force", false);
  e.by_uid = json_fields::optional_integer<std::uint32_t>(ej, "by_uid");
  e.request = json_fields::optional_integer<std::uint64_t>(ej, "request").value_or(0);
  if (ej.contains("cure")) e.cure = cure_from_json(ej.at("cure"));
  if (e.kind == Action::hook) {
    e.hook = ej.at("hook").get<std::string>();
    auto done = parse_action(ej.at("done").get<std::string>());
    if (!done) return std::unexpected("unknown action " + ej.at("done").dump() + " in hook entry");
    e.done = *done;
  }
  if (ej.contains("step")) e.step = static_cast<RequeueStep>(integer<std::uint8_t>(ej, "step", 0, 3));
  return e;
}

std::optional<OwnDrain> own_drain_from_json(const nlohmann::json& j) {
  if (!j.contains("own_drain")) return std::nullopt;
  const auto& d = j.at("own_drain");
  OwnDrain own{d.at("code").get<std::string>(), d.at("reason").get<std::string>(), json_fields::time_ms(d, "at_ms"),
               d.at("held").get<bool>(), d.value("reboot", false), std::nullopt, std::nullopt, std::nullopt};
  if (d.contains("cure")) own.cure = cure_from_json(d.at("cure"));
  if (d.contains("share_look_ms")) own.share_look = json_fields::time_ms(d, "share_look_ms");
  return own;
}

}  // namespace

std::expected<void, std::string> Journal::load() {
  auto read = read_json_file(file_);
  if (!read) return std::unexpected(read.error());
  const auto& j = *read;
  if (j.is_null()) return {};
  try {
    next_id_ = integer<std::uint64_t>(j, "next_id");
    pending_.clear();
    for (const auto& ej : j.at("pending")) {
      auto e = entry_from_json(ej);
      if (!e) return std::unexpected(file_.string() + ": " + e.error());
      if (e->id >= next_id_) throw StateFieldError("entry id " + std::to_string(e->id) + " is not below next_id");
      pending_.push_back(std::move(*e));
    }
    requeued_.clear();
    for (const auto& r : j.at("requeued")) requeued_.insert(job_attempt(r, "requeued"));
    signalled_.clear();
    if (j.contains("signalled"))
      for (const auto& r : j.at("signalled")) signalled_.insert(job_attempt(r, "signalled"));
    fault_history_.clear();
    for (const auto& t : j.at("fault_history_ms")) fault_history_.push_back(json_fields::time_value(t, "fault_history_ms"));
    own_drain_ = own_drain_from_json(j);
    suspicions_.clear();
    if (j.contains("suspicions"))
      for (const auto& s : json_fields::array(j, "suspicions")) {
        if (suspicions_.size() == kMaxSuspicions) break;
        suspicions_.push_back({json_fields::time_ms(s, "at_ms"), json_fields::integer<std::uint32_t>(s, "job_id"),
                               json_fields::integer<std::uint32_t>(s, "uid"), s.at("why").get<std::string>()});
      }
  } catch (const std::exception& e) {
    return std::unexpected(file_.string() + ": bad content: " + e.what());
  }
  return {};
}

std::expected<std::uint64_t, std::string> Journal::add(JournalEntry e) {
  e.id = next_id_++;
  pending_.push_back(e);
  if (auto r = save(); !r) return std::unexpected(r.error());
  return e.id;
}

std::expected<void, std::string> Journal::complete(std::uint64_t id) {
  std::erase_if(pending_, [id](const JournalEntry& e) { return e.id == id; });
  return save();
}

std::expected<void, std::string> Journal::retry_later(std::uint64_t id, const std::string& error, WallTime now) {
  for (auto& e : pending_) {
    if (e.id != id) continue;
    ++e.attempts;
    e.last_error = error;
    // 2 s, 4 s, ... 60 s, less a random part: a thousand daemons whose actions failed together
    // (slurmctld down) do not all call it again in the same second when it is back.
    e.next_try = now + backoff_delay(e.attempts, std::chrono::seconds(2), std::chrono::seconds(60), retry_rng_);
  }
  return save();
}

void Journal::wait_until(std::uint64_t id, WallTime at, const std::string& why) {
  for (auto& e : pending_)
    if (e.id == id) {
      e.next_try = at;
      e.last_error = why;
      ++e.waits;
    }
  // A wait changes nothing that a restart needs (it would wait again): no write, so polling a job
  // that leaves COMPLETING every few tens of milliseconds costs no fsync, and nothing can fail.
}

void Journal::due_now(std::uint64_t id, WallTime now) {
  for (auto& e : pending_)
    if (e.id == id && e.next_try > now) e.next_try = now;
}

std::expected<void, std::string> Journal::advance(std::uint64_t id, RequeueStep step) {
  for (auto& e : pending_)
    if (e.id == id) {
      e.step = step;
      e.attempts = 0;
      e.waits = 0;
      e.last_error.clear();
    }
  return save();
}

std::expected<void, std::string> Journal::set_suspects(std::uint64_t id, std::vector<std::string> exclude, std::string said) {
  for (auto& e : pending_)
    if (e.id == id) {
      e.exclude = exclude;
      e.suspects = said;
    }
  return save();
}

std::optional<WallTime> Journal::next_due() const {
  std::optional<WallTime> first;
  for (const auto& e : pending_)
    if (!first || e.next_try < *first) first = e.next_try;
  return first;
}

const JournalEntry* Journal::find(std::uint64_t id) const {
  for (const auto& e : pending_)
    if (e.id == id) return &e;
  return nullptr;
}

std::expected<void, std::string> Journal::hasten(Action kind, std::uint32_t job_id, std::uint32_t restart_count,
                                                 WallTime by) {
  bool changed = false;
  for (auto& e : pending_)
    if (e.kind == kind && e.job_id == job_id && e.restart_count == restart_count && e.next_try > by && e.attempts == 0 &&
        e.step == RequeueStep::decide && e.last_error.empty()) {
      e.next_try = by;
      changed = true;
    }
  if (!changed) return {};
  return save();
}

bool Journal::has_pending(Action kind, std::uint32_t job_id, std::uint32_t restart_count) const {
  for (const auto& e : pending_)
    if (e.kind == kind && e.job_id == job_id && e.restart_count == restart_count) return true;
  return false;
}

bool Journal::has_pending_drain(const std::string& node) const {
  for (const auto& e : pending_)
    if (e.kind == Action::drain && e.node == node) return true;
  return false;
}

}  // namespace ar::healthd
