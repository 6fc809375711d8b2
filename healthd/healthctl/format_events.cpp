// `healthctl events`: the node's recent notices, newest first, as the daemon keeps them.
#include <fmt/format.h>

#include "clock_text.hpp"
#include "format.hpp"
#include "reply_fields.hpp"
#include "table.hpp"

namespace ar::healthctl {

namespace {

Color colour_of_kind(const std::string& kind) {
  if (kind == "incident" || kind == "drain" || kind == "action_failing") return Color::red;
  if (kind == "requeue" || kind == "resume_cap" || kind == "signal" || kind == "admin" || kind == "cure") return Color::yellow;
  if (kind == "resumed" || kind == "node_returned") return Color::green;
  return Color::none;
}

}  // namespace

std::string format_events(const nlohmann::json& d, const RenderOptions& o) {
  const auto node = text_of(d, "node", "?");
  const auto& events = array_of(d, "events");
  if (events.empty()) return fmt::format("no events recorded by healthd on {}\n", node);
  std::vector<Row> rows;
  for (const auto& e : events) {
    if (!e.is_object()) continue;
    const auto kind = text_of(e, "kind", "?");
    const auto job = int_of(e, "job_id");
    const auto uid = int_of(e, "uid", -1);
    std::string detail;
    if (auto n = text_of(e, "node"); !n.empty() && n != node) detail += n + ": ";
    if (auto attempt = int_of(e, "attempt"); attempt > 0) detail += fmt::format("attempt {}: ", attempt);
    const auto code = text_of(e, "code");
    const auto message = text_of(e, "message");
    detail += code;
    if (!message.empty()) detail += (code.empty() ? "" : ": ") + message;
    if (auto action = text_of(e, "action"); !action.empty() && action != "none") detail += " [" + action + "]";
    rows.push_back({{local_datetime(int_of(e, "at_ms"))},
                    {kind, colour_of_kind(kind)},
                    {job > 0 ? std::to_string(job) : "-"},
                    {uid >= 0 && uid <= UINT32_MAX && has_number(e, "uid") ? o.user(static_cast<std::uint32_t>(uid)) : "-"},
                    {detail.empty() ? "-" : detail}});
  }
  return render_table({{"TIME"}, {"KIND", 14}, {"JOB", 10}, {"USER", 12}, {"DETAIL"}}, rows, o);
}

}  // namespace ar::healthctl
