#include "format.hpp"

#include <ctime>
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

namespace ar::healthctl {

std::string format_ping(const nlohmann::json& d) {
  return fmt::format("healthd {} on node {} is up\n", d.value("version", "?"), d.value("node", "?"));
}

std::string format_status(const nlohmann::json& d) {
  std::ostringstream out;
  out << fmt::format("node:         {}\n", d.value("node", "?"));
  out << fmt::format("healthd:      {} (pid {}, up {} s)\n", d.value("version", "?"), d.value("pid", 0),
                     d.value("uptime_s", 0));
  out << fmt::format("socket:       {}\n", d.value("socket", "?"));
  out << fmt::format("state:        {}\n", d.value("state_dir", "?"));
  out << fmt::format("config:       {}\n", d.value("config_file", "?"));
  out << fmt::format("jobs:         {} running, {} known\n", d.value("jobs_running", 0), d.value("jobs_known", 0));
  const auto& health = d.value("health", nlohmann::json::object());
  const auto& node = health.value("node", nlohmann::json::object());
  if (!node.empty()) {
    out << fmt::format("verdict:      {}\n", node.value("faulty", false)
                                                   ? "FAULTY (" + node.value("fault_code", std::string("?")) + ")"
                                                   : std::string("healthy"));
    out << fmt::format("actions:      {} pending\n", node.value("pending_actions", 0));
    if (node.value("report_only", false))
      out << "mode:         REPORT ONLY ([policy] report_only): decisions are logged, nothing is done\n";
    if (node.contains("drain_withheld")) out << fmt::format("withheld:     {}\n", node.value("drain_withheld", ""));
    if (node.contains("admin_override")) out << fmt::format("override:     {}\n", node.value("admin_override", ""));
    if (node.contains("slurm")) out << fmt::format("slurm:        {}\n", node.value("slurm", ""));
    if (!node.value("journal_written", true))
      out << "journal:      NOT WRITTEN (state filesystem full or read-only?): no action is carried out until it is\n";
  }
  const auto& checks = health.value("checks", nlohmann::json::array());
  if (checks.empty()) {
    out << "checks:       none run yet\n";
    return out.str();
  }
  // The name column fits the longest check name ("gpu.temperature", "script:nightly-fsck").
  std::size_t width = 14;
  for (const auto& c : checks) width = std::max(width, c.value("check", std::string("?")).size());
  out << fmt::format("\n{:<{}} {:<7} {:>8}  {}\n", "CHECK", width, "RESULT", "TIME", "DETAIL");
  for (const auto& c : checks) {
    std::string detail = c.value("code", std::string());
    if (!c.value("message", std::string()).empty()) detail += (detail.empty() ? "" : ": ") + c.value("message", std::string());
    if (c.value("action", std::string("none")) != "none") detail += " [" + c.value("action", std::string()) + "]";
    out << fmt::format("{:<{}} {:<7} {:>6}ms  {}\n", c.value("check", "?"), width, c.value("status", "?"), c.value("duration_ms", 0),
                       detail.empty() ? "-" : detail);
  }
  return out.str();
}

std::string format_jobs(const nlohmann::json& d) {
  const auto& jobs = d.value("jobs", nlohmann::json::array());
  if (jobs.empty()) return fmt::format("no jobs known on node {}\n", d.value("node", "?"));
  std::ostringstream out;
  out << fmt::format("{:<10} {:<6} {:<12} {:<8} {:<8} {:<10} {}\n", "JOBID", "UID", "AUTO-RESUME", "RESTART",
                     "STATE", "STEP", "TASK EXITS");
  for (const auto& job : jobs) {
    bool first = true;
    for (const auto& step : job.value("steps", nlohmann::json::array())) {
      std::string exits;
      for (const auto& e : step.value("task_exits", nlohmann::json::array()))
        exits += fmt::format("{}task {}: {}", exits.empty() ? "" : ", ", e.value("task_rank", 0),
                             e.value("description", "?"));
      if (auto more = step.value("failures_not_kept", 0u); more > 0)
        exits += fmt::format(" (and {} more failed)", more);
      if (auto ok = step.value("tasks_ok", 0u); ok > 0) exits += fmt::format("{}{} ok", exits.empty() ? "" : ", ", ok);
      out << fmt::format("{:<10} {:<6} {:<12} {:<8} {:<8} {:<10} {}\n",
                         first ? std::to_string(job.value("job_id", 0u)) : "",
                         first ? std::to_string(job.value("uid", 0u)) : "",
                         first ? (job.value("auto_resume", false) ? "yes" : "no") : "",
                         step.value("restart_count", 0u), step.value("running", false) ? "running" : "ended",
                         step.value("step", "?") + (step.value("auto_resume", false) ? "" : "(off)"),
                         exits.empty() ? "-" : exits);
      first = false;
    }
  }
  return out.str();
}

}  // namespace ar::healthctl

namespace ar::healthctl {

std::string format_explain(const nlohmann::json& d) {
  const auto& events = d.value("timeline", nlohmann::json::array());
  if (events.empty())
    return fmt::format("node {} has no record of job {}\n", d.value("node", "?"), d.value("job_id", 0u));
  std::ostringstream out;
  out << fmt::format("job {} as seen by healthd on {}:\n", d.value("job_id", 0u), d.value("node", "?"));
  const auto first = events.front().value("at_ms", std::int64_t{0});
  for (const auto& e : events) {
    auto at = e.value("at_ms", std::int64_t{0});
    std::time_t secs = static_cast<std::time_t>(at / 1000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    out << fmt::format("  {}.{:03d}Z  +{:>7.3f}s  {:<20} {:<4} {}\n", stamp, static_cast<int>(at % 1000),
                       static_cast<double>(at - first) / 1000.0, e.value("event", "?"), e.value("node", "?"),
                       e.value("detail", ""));
  }
  return out.str();
}

}  // namespace ar::healthctl
