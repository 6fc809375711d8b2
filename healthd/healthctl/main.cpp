// healthctl: the command-line face of healthd for admins and users.
#include <cstdlib>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "auto_resume/unix_client.hpp"
#include "format.hpp"

namespace {

// The socket: --socket, else $HEALTHD_SOCKET, else the packaged default.
std::string default_socket() {
  if (const char* env = std::getenv("HEALTHD_SOCKET"); env && *env) return env;
  return "/run/healthd/healthd.sock";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"healthctl: query the node health daemon"};
  app.require_subcommand(1);
  std::string socket = default_socket();
  int timeout_ms = 5000;
  bool json = false;
  app.add_option("-s,--socket", socket, "healthd socket (default: $HEALTHD_SOCKET or /run/healthd/healthd.sock)");
  app.add_option("--timeout-ms", timeout_ms, "give up after this many milliseconds")->check(CLI::Range(1, 600000))->capture_default_str();

  struct Command {
    const char* name;
    const char* help;
    const char* type;
    std::string (*format)(const nlohmann::json&);
  };
  const Command commands[] = {
      {"ping", "check that healthd answers", "ping", ar::healthctl::format_ping},
      {"status", "show the daemon and its checks", "status", ar::healthctl::format_status},
      {"jobs", "list the jobs and steps seen on this node", "jobs", ar::healthctl::format_jobs},
  };
  for (const auto& c : commands) {
    auto* sub = app.add_subcommand(c.name, c.help);
    sub->add_flag("--json", json, "print the daemon's reply as JSON");
  }
  std::uint32_t job_id = 0;
  auto* explain = app.add_subcommand("explain", "show why and when a job was requeued, as a timeline");
  explain->add_option("JOBID", job_id, "Slurm job id")->required()->check(CLI::Range(1u, 4294967295u));
  explain->add_flag("--json", json, "print the daemon's reply as JSON");
  bool now = false;
  auto* check = app.add_subcommand("check", "show the checks' results; with --now, run every check first");
  check->add_flag("--now", now, "run every check now (expensive ones too) and wait for the results; root only");
  check->add_flag("--json", json, "print the daemon's reply as JSON");
  CLI11_PARSE(app, argc, argv);

  if (app.got_subcommand("check")) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    auto left = [&] {
      return std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                        deadline - std::chrono::steady_clock::now()));
    };
    std::uint64_t wanted = 0;
    if (now) {
      auto queued = ar::call(socket, ar::proto::to_json(ar::proto::Request{ar::proto::CheckNow{}}), left());
      if (!queued) {
        std::cerr << "healthctl: check: healthd at " << socket << " is not answering: " << queued.error() << "\n";
        return 1;
      }
      wanted = queued->value("sweep", std::uint64_t{0});
    }
    // The sweep runs on the daemon's engine; its results show in the status once it is done.
    for (;;) {
      auto reply = ar::call(socket, ar::proto::to_json(ar::proto::Request{ar::proto::StatusQuery{}}), left());
      if (!reply) {
        std::cerr << "healthctl: check: healthd at " << socket << " is not answering: " << reply.error() << "\n";
        return 1;
      }
      const auto health = reply->value("health", nlohmann::json::object());
      if (health.value("sweep_seq", std::uint64_t{0}) >= wanted) {
        std::cout << (json ? reply->dump(2) + "\n" : ar::healthctl::format_status(*reply));
        for (const auto& r : health.value("checks", nlohmann::json::array()))
          if (r.value("status", "") == "fault") return 3;  // scripts may act on it: 3 means a fault
        return 0;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        std::cerr << "healthctl: check: the sweep did not finish within " << timeout_ms << " ms\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  if (app.got_subcommand("explain")) {
    auto reply = ar::call(socket, ar::proto::to_json(ar::proto::Request{ar::proto::ExplainQuery{job_id}}),
                          std::chrono::milliseconds(timeout_ms));
    if (!reply) {
      std::cerr << "healthctl: explain: healthd at " << socket << " is not answering: " << reply.error() << "\n";
      return 1;
    }
    std::cout << (json ? reply->dump(2) + "\n" : ar::healthctl::format_explain(*reply));
    return 0;
  }

  for (const auto& c : commands) {
    if (!app.got_subcommand(c.name)) continue;
    auto reply = ar::call(socket, {{"v", ar::proto::kVersion}, {"type", c.type}}, std::chrono::milliseconds(timeout_ms));
    if (!reply) {
      std::cerr << "healthctl: " << c.name << ": healthd at " << socket << " is not answering: " << reply.error() << "\n";
      return 1;
    }
    if (json) std::cout << reply->dump(2) << "\n";
    else std::cout << c.format(*reply);
    return 0;
  }
  return 2;
}
