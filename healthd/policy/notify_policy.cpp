#include "policy/notify_policy.hpp"

#include "text/text.hpp"

namespace ar::healthd::policy {

NotifyDecision decide_notify(const std::vector<NotifyFinding>& found, const std::set<std::string>& open, bool full_pass) {
  NotifyDecision d;
  // A sweep that ran only some checks cannot tell an episode is over: it keeps every open one.
  if (!full_pass) d.open = open;
  for (const auto& f : found) {
    const bool was_open = open.contains(f.code);
    if (d.open.insert(f.code).second && !was_open) d.tell.push_back(f);
  }
  return d;
}

namespace {

class NotifyRule final : public SweepRule {
 public:
  std::vector<JournalEntry> judge(const SweepFacts& sweep) override {
    std::vector<NotifyFinding> found;
    for (const auto& r : sweep.results)
      if (r.action == Remedy::notify_only && r.status == Status::warn)
        found.push_back({fault_code_text(r.code), fault_message_text(r.message)});
    auto decision = decide_notify(found, open_, sweep.full_pass);
    open_ = std::move(decision.open);
    std::vector<JournalEntry> entries;
    for (auto& f : decision.tell) {
      JournalEntry e = due_entry(Action::notify_only, sweep.node, std::move(f.code), sweep.now);
      e.reason = std::move(f.message);
      entries.push_back(std::move(e));
    }
    return entries;
  }

 private:
  std::set<std::string> open_;  // the episodes told, still open (a restart tells them once more)
};

}  // namespace

std::unique_ptr<SweepRule> notify_rule() { return std::make_unique<NotifyRule>(); }

}  // namespace ar::healthd::policy
