// `healthctl ping`, `jobs` and `explain`.
#include "format.hpp"

#include <fmt/format.h>

#include "clock_text.hpp"
#include "reply_fields.hpp"
#include "table.hpp"

namespace ar::healthctl {

std::string format_ping(const nlohmann::json& d) {
  return fmt::format("healthd {} on node {} is up\n", text_of(d, "version", "?"), text_of(d, "node", "?"));
}

std::string format_jobs(const nlohmann::json& d, const RenderOptions& o) {
  const auto& jobs = array_of(d, "jobs");
  if (jobs.empty()) return fmt::format("no jobs known on node {}\n", text_of(d, "node", "?"));
  std::vector<Row> rows;
  for (const auto& job : jobs) {
    bool first = true;
    for (const auto& step : array_of(job, "steps")) {
      std::string exits;
      for (const auto& e : array_of(step, "task_exits"))
        exits += fmt::format("{}task {}: {}", exits.empty() ? "" : ", ", int_of(e, "task_rank"),
                             text_of(e, "description", "?"));
      if (auto more = int_of(step, "failures_not_kept"); more > 0) exits += fmt::format(" (and {} more failed)", more);
      if (auto ok = int_of(step, "tasks_ok"); ok > 0) exits += fmt::format("{}{} ok", exits.empty() ? "" : ", ", ok);
      const auto uid = int_of(job, "uid", -1);
      rows.push_back({{first ? std::to_string(int_of(job, "job_id")) : ""},
                      {first ? (uid >= 0 && uid <= UINT32_MAX ? o.user(static_cast<std::uint32_t>(uid)) : "?") : ""},
                      {first ? (bool_of(job, "auto_resume") ? "yes" : "no") : ""},
                      {std::to_string(int_of(step, "restart_count"))},
                      {bool_of(step, "running") ? "running" : "ended"},
                      {text_of(step, "step", "?") + (bool_of(step, "auto_resume") ? "" : "(off)")},
                      {exits.empty() ? "-" : exits}});
      first = false;
    }
  }
  return render_table({{"JOBID"}, {"USER", 12}, {"AUTO-RESUME"}, {"RESTART", 0, true}, {"STATE"}, {"STEP", 14},
                       {"TASK EXITS"}},
                      rows, o);
}

std::string format_explain(const nlohmann::json& d, const RenderOptions& o) {
  const auto& events = array_of(d, "timeline");
  if (events.empty())
    return fmt::format("node {} has no record of job {}\n", text_of(d, "node", "?"), int_of(d, "job_id"));
  const auto first = int_of(events.front(), "at_ms");
  const auto uid = int_of(d, "uid", -1);  // the job's owner, when the node saw its steps
  const std::string owner = uid >= 0 && uid <= UINT32_MAX ? " (" + o.user(static_cast<std::uint32_t>(uid)) + ")" : "";
  std::string out = fmt::format("job {}{} as seen by healthd on {} (local time, UTC{}):\n", int_of(d, "job_id"), owner,
                                text_of(d, "node", "?"), utc_offset(first));
  std::vector<Row> rows;
  for (const auto& e : events) {
    const auto at = int_of(e, "at_ms");
    rows.push_back({{local_datetime(at, /*millis=*/true)},
                    {fmt::format("+{:.3f}s", static_cast<double>(at - first) / 1000.0)},
                    {text_of(e, "event", "?")},
                    {text_of(e, "node", "?")},
                    {text_of(e, "detail")}});
  }
  return out + render_table({{"TIME"}, {"OFFSET", 0, true}, {"EVENT", 20}, {"NODE", 12}, {"DETAIL"}}, rows, o);
}

}  // namespace ar::healthctl
