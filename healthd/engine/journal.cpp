#include "journal.hpp"

#include "state/atomic_file.hpp"



namespace ar::healthd {
namespace {

std::optional<ActionKind> parse_kind(const std::string& s) {
  for (auto k : {ActionKind::drain, ActionKind::requeue, ActionKind::resume, ActionKind::comment, ActionKind::signal})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

}  // namespace

std::string to_string(ActionKind k) {
  switch (k) {
    case ActionKind::drain: return "drain";
    case ActionKind::requeue: return "requeue";
    case ActionKind::resume: return "resume";
    case ActionKind::comment: return "comment";
    case ActionKind::signal: return "signal";
  }
  return "?";
}

std::expected<void, std::string> Journal::save() const {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : pending_) {
    entries.push_back({{"id", e.id}, {"kind", to_string(e.kind)}, {"node", e.node}, {"job_id", e.job_id},
                       {"restart_count", e.restart_count}, {"code", e.code}, {"reason", e.reason},
                       {"created_ms", to_epoch_ms(e.created)}, {"attempts", e.attempts}, {"next_try_ms", to_epoch_ms(e.next_try)},
                       {"last_error", e.last_error}});
    if (e.cap) entries.back()["cap"] = *e.cap;
    if (e.reboot) entries.back()["reboot"] = true;
  }
  nlohmann::json requeued = nlohmann::json::array();
  for (const auto& [job, restart] : requeued_) requeued.push_back({job, restart});
  nlohmann::json signalled = nlohmann::json::array();
  for (const auto& [job, restart] : signalled_) signalled.push_back({job, restart});
  nlohmann::json history = nlohmann::json::array();
  for (const auto& t : fault_history_) history.push_back(to_epoch_ms(t));
  nlohmann::json j = {{"version", 1}, {"next_id", next_id_}, {"pending", entries}, {"requeued", requeued},
                      {"fault_history_ms", history}, {"signalled", signalled}};
  if (own_drain_)
    j["own_drain"] = {{"code", own_drain_->code}, {"reason", own_drain_->reason}, {"at_ms", to_epoch_ms(own_drain_->at)},
                      {"held", own_drain_->held}, {"reboot", own_drain_->reboot}};
  return write_file_atomically(file_, j.dump());
}

std::expected<void, std::string> Journal::load() {
  auto read = read_json_file(file_);
  if (!read) return std::unexpected(read.error());
  const auto& j = *read;
  if (j.is_null()) return {};
  try {
    next_id_ = j.at("next_id").get<std::uint64_t>();
    pending_.clear();
    for (const auto& ej : j.at("pending")) {
      JournalEntry e;
      e.id = ej.at("id").get<std::uint64_t>();
      auto kind = parse_kind(ej.at("kind").get<std::string>());
      if (!kind) return std::unexpected(file_.string() + ": unknown action kind " + ej.at("kind").dump());
      e.kind = *kind;
      e.node = ej.at("node").get<std::string>();
      e.job_id = ej.at("job_id").get<std::uint32_t>();
      e.restart_count = ej.at("restart_count").get<std::uint32_t>();
      e.code = ej.at("code").get<std::string>();
      e.reason = ej.at("reason").get<std::string>();
      e.created = from_epoch_ms(ej.at("created_ms").get<std::int64_t>());
      e.attempts = ej.at("attempts").get<std::uint32_t>();
      e.next_try = from_epoch_ms(ej.at("next_try_ms").get<std::int64_t>());
      e.last_error = ej.at("last_error").get<std::string>();
      if (ej.contains("cap")) e.cap = ej.at("cap").get<std::uint32_t>();
      e.reboot = ej.value("reboot", false);
      pending_.push_back(e);
    }
    requeued_.clear();
    for (const auto& r : j.at("requeued")) requeued_.insert({r.at(0).get<std::uint32_t>(), r.at(1).get<std::uint32_t>()});
    signalled_.clear();
    if (j.contains("signalled"))
      for (const auto& r : j.at("signalled")) signalled_.insert({r.at(0).get<std::uint32_t>(), r.at(1).get<std::uint32_t>()});
    fault_history_.clear();
    for (const auto& t : j.at("fault_history_ms")) fault_history_.push_back(from_epoch_ms(t.get<std::int64_t>()));
    own_drain_.reset();
    if (j.contains("own_drain")) {
      const auto& d = j.at("own_drain");
      own_drain_ = OwnDrain{d.at("code").get<std::string>(), d.at("reason").get<std::string>(),
                            from_epoch_ms(d.at("at_ms").get<std::int64_t>()), d.at("held").get<bool>(),
                            d.value("reboot", false)};
    }
  } catch (const nlohmann::json::exception& e) {
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
    auto delay = std::chrono::seconds(std::min<std::int64_t>(60, 2LL << std::min<std::uint32_t>(e.attempts - 1, 5)));
    e.next_try = now + delay;
  }
  return save();
}

std::expected<void, std::string> Journal::hasten(ActionKind kind, std::uint32_t job_id, std::uint32_t restart_count,
                                                 WallTime by) {
  bool changed = false;
  for (auto& e : pending_)
    if (e.kind == kind && e.job_id == job_id && e.restart_count == restart_count && e.next_try > by) {
      e.next_try = by;
      changed = true;
    }
  if (!changed) return {};
  return save();
}

bool Journal::has_pending(ActionKind kind, std::uint32_t job_id, std::uint32_t restart_count) const {
  for (const auto& e : pending_)
    if (e.kind == kind && e.job_id == job_id && e.restart_count == restart_count) return true;
  return false;
}

}  // namespace ar::healthd
