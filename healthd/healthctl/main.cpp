// healthctl: the command-line face of healthd for admins and users. This file reads the command
// line; the commands are in commands.cpp, the tables in format*.cpp, the exit codes in
// exit_codes.hpp.
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "socket_path.hpp"
#include "terminal.hpp"
#include "users.hpp"
#include "version_text.hpp"

namespace {

using ar::healthctl::exit_code;
using ar::healthctl::Outcome;

constexpr const char* kFooter = R"(Global options (--json, --socket, --node, --timeout-ms, --no-color) go before or
after the command. Tables fit the terminal (or $COLUMNS); to a pipe nothing is cut.

Which daemon: --socket PATH; else, with --node NAME, $HEALTHD_SOCKET_TEMPLATE with
%n replaced by NAME (a host running several nodes' daemons) or, without it, the
default socket when NAME is this host's short name; else $HEALTHD_SOCKET; else
/run/healthd/healthd.sock.

Exit status of status, check and gpus: 0 healthy, 1 warnings (a check warns or
could not run), 2 faulty (a fault, or the node still held faulty). Of every
command: 3 the daemon is unreachable (or gave no usable answer), 4 refused (root
only: "forbidden"; too many clients: "busy"), 64 a usage error. drain, resume,
clear: 0 done, 1 queued but not confirmed within the timeout, 5 not done (the
node's state does not allow it; the message says why). Other commands exit 0
when done; watch exits 0 at Ctrl-C.)";

// The options every command shown as a table has.
void add_long_flag(CLI::App* sub, bool& flag) {
  sub->add_flag("-l,--long", flag, "show every text in full and every column (lines may pass the terminal's width)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"healthctl: ask and steer the node health daemon (healthd) of Slurm auto-resume"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ar::healthctl::version_line(), "print healthctl's version and exit");
  app.footer(kFooter);

  std::string socket_flag, node_flag;
  int timeout_ms = 5000;
  bool json = false, no_color = false;
  auto* socket_opt = app.add_option("-s,--socket", socket_flag,
                                    "the daemon's socket (default: $HEALTHD_SOCKET, else /run/healthd/healthd.sock)");
  app.add_option("--node", node_flag,
                 "the daemon of node NAME on this host: the socket $HEALTHD_SOCKET_TEMPLATE names with %n = NAME, "
                 "else the default socket if NAME is this host")
      ->excludes(socket_opt);
  app.add_option("--timeout-ms", timeout_ms, "give up after this many milliseconds (check --now, drain, resume, "
                                             "clear: the whole wait)")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  app.add_flag("--json", json, "print the daemon's reply as JSON");
  app.add_flag("--no-color", no_color, "no colours (also: NO_COLOR set, or stdout not a terminal)");

  bool long_form = false, watch_flag = false, now = false, force = false;
  unsigned interval_s = 2, count = 20;
  std::uint32_t job_id = 0;
  std::string reason, code;
  auto sub = [&](const char* name, const char* help) {
    auto* s = app.add_subcommand(name, help);
    s->fallthrough();  // the global options, after the command too
    s->footer("Global options (healthctl --help) go before or after the command; exit status: healthctl --help.");
    return s;
  };
  auto* ping = sub("ping", "check that healthd answers");
  auto* status = sub("status", "show the daemon, the node's verdict and every check's latest result");
  add_long_flag(status, long_form);
  status->add_flag("--watch", watch_flag, "redraw it every --interval seconds, as watch does, until Ctrl-C");
  status->add_option("-n,--interval", interval_s, "with --watch: seconds between frames")
      ->check(CLI::Range(1u, 3600u))
      ->capture_default_str();
  auto* check = sub("check", "show the checks' results; with --now, run every check first");
  check->add_flag("--now", now, "run every check now (expensive ones too) and wait for the results; root only");
  add_long_flag(check, long_form);
  auto* gpus = sub("gpus", "show the NVIDIA GPUs healthd sees: health, ECC, row remapping, last XID");
  add_long_flag(gpus, long_form);
  auto* jobs = sub("jobs", "list the jobs and steps seen on this node");
  add_long_flag(jobs, long_form);
  auto* explain = sub("explain", "show why and when a job was requeued, as a timeline");
  explain->add_option("JOBID", job_id, "Slurm job id")->required()->check(CLI::Range(1u, 4294967295u));
  add_long_flag(explain, long_form);
  auto* events = sub("events", "show the node's recent events (incidents, drains, requeues, resumes), newest first");
  events->add_option("-n,--count", count, "at most this many")->check(CLI::Range(1u, 1000u))->capture_default_str();
  add_long_flag(events, long_form);
  auto* watch = sub("watch", "the status, redrawn every --interval seconds until Ctrl-C");
  watch->add_option("-n,--interval", interval_s, "seconds between frames")->check(CLI::Range(1u, 3600u))->capture_default_str();
  add_long_flag(watch, long_form);
  auto* drain = sub("drain", "take this node out of service through healthd (root only)");
  drain->add_option("--reason", reason, "why, in the Slurm reason (default: \"drained by USER via healthctl\")")
      ->check([](const std::string& r) { return r.empty() || r.size() > 200 ? "1 to 200 bytes" : ""; });
  auto* resume = sub("resume", "return this node to service through healthd (root only)");
  resume->add_flag("--force", force, "also when the node was drained by someone other than healthd");
  auto* clear = sub("clear", "forget an active fault an admin has fixed, by its code (root only)");
  clear->add_option("CODE", code, "the fault's code, as status shows it (e.g. KMSG-MCE)")
      ->required()
      ->check([](const std::string& c) { return c.empty() || c.size() > 64 ? "1 to 64 bytes" : ""; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, the version, or the error and usage hint
    return rc == 0 ? 0 : exit_code(Outcome::usage);
  }

  ar::healthctl::SocketChoice choice;
  if (app.count("--socket") > 0) choice.socket_flag = socket_flag;
  if (app.count("--node") > 0) choice.node_flag = node_flag;
  choice.socket_env = std::getenv("HEALTHD_SOCKET");
  choice.template_env = std::getenv("HEALTHD_SOCKET_TEMPLATE");
  choice.short_hostname = ar::healthctl::short_hostname();
  auto socket = ar::healthctl::choose_socket(choice);
  if (!socket) {
    std::cerr << "healthctl: " << socket.error() << "\n";
    return exit_code(Outcome::usage);
  }

  const auto term = ar::healthctl::detect_terminal();
  ar::healthctl::Context c;
  c.socket = *socket;
  c.timeout = std::chrono::milliseconds(timeout_ms);
  c.json = json;
  c.tty = term.tty;
  c.render.width = term.width;
  c.render.long_form = long_form;
  c.render.ellipsis = term.ellipsis;
  c.render.color = ar::healthctl::want_color(term.tty, no_color, std::getenv("NO_COLOR"), std::getenv("TERM"));
  c.render.user_name = ar::healthctl::user_name_of;
  c.out = &std::cout;
  c.err = &std::cerr;
  c.command = app.get_subcommands().front()->get_name();

  using ar::healthctl::AdminAction;
  if (ping->parsed()) return ar::healthctl::run_ping(c);
  if (status->parsed()) {
    return watch_flag ? ar::healthctl::run_watch(c, std::chrono::seconds(interval_s)) : ar::healthctl::run_status(c);
  }
  if (check->parsed()) return ar::healthctl::run_check(c, now);
  if (gpus->parsed()) return ar::healthctl::run_gpus(c);
  if (jobs->parsed()) return ar::healthctl::run_jobs(c);
  if (explain->parsed()) return ar::healthctl::run_explain(c, job_id);
  if (events->parsed()) return ar::healthctl::run_events(c, count);
  if (watch->parsed()) return ar::healthctl::run_watch(c, std::chrono::seconds(interval_s));
  if (drain->parsed()) {
    if (reason.empty()) reason = "drained by " + ar::healthctl::invoking_user() + " via healthctl";
    return ar::healthctl::run_admin(c, {AdminAction::Kind::drain, reason, false, {}});
  }
  if (resume->parsed()) return ar::healthctl::run_admin(c, {AdminAction::Kind::resume, {}, force, {}});
  if (clear->parsed()) return ar::healthctl::run_admin(c, {AdminAction::Kind::clear, {}, false, code});
  return exit_code(Outcome::usage);
}
