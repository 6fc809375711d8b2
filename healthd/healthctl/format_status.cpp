// `healthctl status`: the daemon, the node's verdict, and a line per check result.
#include <fmt/format.h>

#include "clock_text.hpp"
#include "format.hpp"
#include "layout.hpp"
#include "reply_fields.hpp"
#include "table.hpp"

namespace ar::healthctl {

namespace {

constexpr std::size_t kCheckNameCap = 20;  // "node.process.munged" fits; a longer name is cut
constexpr std::string_view kNotApplicable = "not applicable";

// The status an active fault carries, from the action it calls for (as the daemon's status_for()).
std::string status_of_action(const std::string& action) {
  if (action == "none" || action.empty()) return "ok";
  if (action == "warn" || action == "restart_app") return "warn";
  return "fault";
}

// "CODE: message [action]", or "-" when there is nothing to say.
std::string detail_text(const std::string& code, std::string message, const std::string& action) {
  std::string d = code;
  if (!message.empty()) d += (d.empty() ? "" : ": ") + message;
  if (!action.empty() && action != "none") d += " [" + action + "]";
  return d.empty() ? "-" : d;
}

std::string took_text(std::int64_t ms) {
  if (ms < 1000) return fmt::format("{}ms", ms < 0 ? 0 : ms);
  return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
}

void add_result_rows(std::vector<Row>& rows, const nlohmann::json& r, const RenderOptions& o) {
  if (!r.is_object()) return;
  const auto name = text_of(r, "check", "?");
  const auto status = text_of(r, "status", "?");
  const auto taken = when(int_of(r, "at_ms"), o.now_ms, /*full_date=*/o.long_form);
  const auto took = took_text(int_of(r, "duration_ms"));
  auto row = [&](const std::string& word, std::string detail) {
    Row cells{{name}, {word, colour_of_status(word)}, {taken}};
    if (o.long_form) cells.push_back({took});
    cells.push_back({std::move(detail)});
    rows.push_back(std::move(cells));
  };
  // Every fault a check holds, not only the worst it reports as its code.
  int shown = 0;
  for (const auto& f : array_of(object_of(r, "detail"), "active")) {
    if (!f.is_object()) continue;
    const auto action = text_of(f, "action");
    row(status_of_action(action), detail_text(text_of(f, "code"), text_of(f, "message"), action));
    ++shown;
  }
  if (shown > 0) return;
  auto message = text_of(r, "message");
  if (status == "ok" && is_not_applicable(r)) {
    // "n/a" says it; the rest of the message says why.
    if (message.starts_with(kNotApplicable)) {
      message.erase(0, kNotApplicable.size());
      while (!message.empty() && (message.front() == ':' || message.front() == ' ')) message.erase(0, 1);
    }
    row("n/a", message.empty() ? "-" : message);
    return;
  }
  row(status, detail_text(text_of(r, "code"), message, text_of(r, "action")));
}

}  // namespace

bool is_not_applicable(const nlohmann::json& result) {
  if (!result.is_object()) return false;
  if (auto a = result.find("applicable"); a != result.end() && a->is_boolean() && !a->get<bool>()) return true;
  const auto& detail = object_of(result, "detail");
  if (auto a = detail.find("applicable"); a != detail.end() && a->is_boolean() && !a->get<bool>()) return true;
  return text_of(result, "message").starts_with(kNotApplicable);
}

std::string format_status(const nlohmann::json& d, const RenderOptions& o) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value, ValueKind kind = ValueKind::prose,
                  Color c = Color::none) { out += labelled(label, value, kind, o, c); };
  line("node", text_of(d, "node", "?"));
  line("healthd", fmt::format("{} (pid {}, up {})", text_of(d, "version", "?"), int_of(d, "pid"),
                              span(int_of(d, "uptime_s"))));
  line("socket", text_of(d, "socket", "?"), ValueKind::path);
  line("state", text_of(d, "state_dir", "?"), ValueKind::path);
  line("config", text_of(d, "config_file", "?"), ValueKind::path);
  line("jobs", fmt::format("{} running, {} known", int_of(d, "jobs_running"), int_of(d, "jobs_known")));
  const auto& health = object_of(d, "health");
  const auto& node = object_of(health, "node");
  if (!node.empty()) {
    const bool faulty = bool_of(node, "faulty");
    line("verdict", faulty ? "FAULTY (" + text_of(node, "fault_code", "?") + ")" : std::string("healthy"),
         ValueKind::prose, faulty ? Color::red : Color::green);
    line("actions", fmt::format("{} pending", int_of(node, "pending_actions")));
    if (bool_of(node, "report_only"))
      line("mode", "REPORT ONLY ([policy] report_only): nothing is done, only logged");
    if (const auto& own = object_of(node, "own_drain"); !own.empty()) {
      line("drained", text_of(own, "reason") + (bool_of(own, "held") ? " [held: until an admin resumes it]" : ""));
      // The cure chain and how far it got: "reset_gpu -> reboot -> replace: step 2 of 3 (reboot), running".
      if (const auto& cure = object_of(own, "cure"); !cure.empty() && text_of(cure, "chain") != "drain only") {
        const std::string phase = text_of(cure, "phase", "?");
        std::string where = phase == "exhausted"
                                ? std::string("every step tried")
                                : fmt::format("step {} of {} ({}), {}", int_of(cure, "step_no"), int_of(cure, "steps"),
                                              text_of(cure, "step", "?"), phase);
        const std::string last = text_of(cure, "last");
        line("cure", text_of(cure, "chain") + ": " + where + (last.empty() ? "" : "; last: " + last));
      }
    }
    // Named the suspect of stalls (issue 34): how many count towards the lemon rule, and the last one's evidence.
    if (const auto& sus = object_of(node, "suspicions"); !sus.empty())
      line("suspected", fmt::format("{} of {} towards a deep check: {}; last: {}", int_of(sus, "in_window"),
                                    int_of(sus, "lemon_at"), text_of(sus, "summary"), text_of(object_of(sus, "last"), "why")),
           ValueKind::prose, Color::yellow);
    if (const auto& slow = object_of(node, "stragglers"); !slow.empty())
      line("straggling", fmt::format("ranks here run slower than the rest of {} job(s) by more than {:.0f}% ({}{}); "
                                     "healthctl explain JOB says which ranks and what the checks say",
                                     int_of(slow, "jobs"), number_of(slow, "share") * 100, text_of(slow, "action"),
                                     int_of(slow, "requeued_without") > 0
                                         ? fmt::format(", {} requeued without this node", int_of(slow, "requeued_without"))
                                         : std::string()),
           ValueKind::prose, Color::yellow);
    if (node.contains("drain_withheld")) line("withheld", text_of(node, "drain_withheld"));
    if (node.contains("admin_override")) line("override", text_of(node, "admin_override"));
    if (node.contains("slurm")) line("slurm", text_of(node, "slurm"));
    if (!bool_of(node, "journal_written", true))
      line("journal", "NOT WRITTEN (state filesystem full or read-only?): no action is carried out until it is",
           ValueKind::prose, Color::red);
  }
  const auto& checks = array_of(health, "checks");
  if (checks.empty()) {
    line("checks", "none run yet");
    return out;
  }
  std::vector<Row> rows;
  for (const auto& r : checks) add_result_rows(rows, r, o);
  std::vector<Column> columns{{"CHECK", kCheckNameCap}, {"RESULT"}, {"TAKEN"}};
  if (o.long_form) columns.push_back({"TOOK", 0, true});
  columns.push_back({"DETAIL"});
  return out + "\n" + render_table(columns, rows, o);
}

}  // namespace ar::healthctl
