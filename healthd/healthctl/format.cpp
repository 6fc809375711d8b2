#include "format.hpp"

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
  const auto& checks = d.value("checks", nlohmann::json::array());
  if (checks.empty()) out << "checks:       none configured\n";
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
