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

// What the command line said: the global options, and every command's own.
struct Args {
  std::string socket_flag, node_flag;
  int timeout_ms = 5000;
  bool json = false, no_color = false;
  bool long_form = false, watch_flag = false, now = false, force = false;
  unsigned interval_s = 2, count = 20;
  std::uint32_t job_id = 0;
  std::string reason, code;
};

// The commands, to see which one was given.
struct Commands {
  CLI::App *ping, *status, *check, *gpus, *jobs, *explain, *events, *watch, *drain, *resume, *clear;
};

void add_global_options(CLI::App& app, Args& a) {
  auto* socket_opt = app.add_option("-s,--socket", a.socket_flag,
                                    "the daemon's socket (default: $HEALTHD_SOCKET, else /run/healthd/healthd.sock)");
  app.add_option("--node", a.node_flag,
                 "the daemon of node NAME on this host: the socket $HEALTHD_SOCKET_TEMPLATE names with %n = NAME, "
                 "else the default socket if NAME is this host")
      ->excludes(socket_opt);
  app.add_option("--timeout-ms", a.timeout_ms, "give up after this many milliseconds (check --now, drain, resume, "
                                               "clear: the whole wait)")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  app.add_flag("--json", a.json, "print the daemon's reply as JSON");
  app.add_flag("--no-color", a.no_color, "no colours (also: NO_COLOR set, or stdout not a terminal)");
}

// The commands that read the daemon's state.
void add_read_commands(CLI::App& app, Args& a, Commands& c) {
  auto sub = [&](const char* name, const char* help) {
    auto* s = app.add_subcommand(name, help);
    s->fallthrough();  // the global options, after the command too
    s->footer("Global options (healthctl --help) go before or after the command; exit status: healthctl --help.");
    return s;
  };
  c.ping = sub("ping", "check that healthd answers");
  c.status = sub("status", "show the daemon, the node's verdict and every check's latest result");
  add_long_flag(c.status, a.long_form);
  c.status->add_flag("--watch", a.watch_flag, "redraw it every --interval seconds, as watch does, until Ctrl-C");
  c.status->add_option("-n,--interval", a.interval_s, "with --watch: seconds between frames")
      ->check(CLI::Range(1u, 3600u))
      ->capture_default_str();
  c.check = sub("check", "show the checks' results; with --now, run every check first");
  c.check->add_flag("--now", a.now, "run every check now (expensive ones too) and wait for the results; root only");
  add_long_flag(c.check, a.long_form);
  c.gpus = sub("gpus", "show the NVIDIA GPUs healthd sees: health, ECC, row remapping, last XID");
  add_long_flag(c.gpus, a.long_form);
  c.jobs = sub("jobs", "list the jobs and steps seen on this node");
  add_long_flag(c.jobs, a.long_form);
  c.explain = sub("explain", "show why and when a job was requeued, as a timeline");
  c.explain->add_option("JOBID", a.job_id, "Slurm job id")->required()->check(CLI::Range(1u, 4294967295u));
  add_long_flag(c.explain, a.long_form);
  c.events = sub("events", "show the node's recent events (incidents, drains, requeues, resumes), newest first");
  c.events->add_option("-n,--count", a.count, "at most this many")->check(CLI::Range(1u, 1000u))->capture_default_str();
  add_long_flag(c.events, a.long_form);
  c.watch = sub("watch", "the status, redrawn every --interval seconds until Ctrl-C");
  c.watch->add_option("-n,--interval", a.interval_s, "seconds between frames")->check(CLI::Range(1u, 3600u))->capture_default_str();
  add_long_flag(c.watch, a.long_form);
}

// The commands that steer the node (root only).
void add_admin_commands(CLI::App& app, Args& a, Commands& c) {
  auto sub = [&](const char* name, const char* help) {
    auto* s = app.add_subcommand(name, help);
    s->fallthrough();
    s->footer("Global options (healthctl --help) go before or after the command; exit status: healthctl --help.");
    return s;
  };
  c.drain = sub("drain", "take this node out of service through healthd (root only)");
  c.drain->add_option("--reason", a.reason, "why, in the Slurm reason (default: \"drained by USER via healthctl\")")
      ->check([](const std::string& r) { return r.empty() || r.size() > 200 ? "1 to 200 bytes" : ""; });
  c.resume = sub("resume", "return this node to service through healthd (root only)");
  c.resume->add_flag("--force", a.force, "also when the node was drained by someone other than healthd");
  c.clear = sub("clear", "forget an active fault an admin has fixed, by its code (root only)");
  c.clear->add_option("CODE", a.code, "the fault's code, as status shows it (e.g. KMSG-MCE)")
      ->required()
      ->check([](const std::string& code) { return code.empty() || code.size() > 64 ? "1 to 64 bytes" : ""; });
}

// How to reach the daemon and how to show its answers: the options, the environment, the terminal.
ar::healthctl::Context make_context(const Args& a, std::string socket, std::string command) {
  const auto term = ar::healthctl::detect_terminal();
  ar::healthctl::Context c;
  c.socket = std::move(socket);
  c.timeout = std::chrono::milliseconds(a.timeout_ms);
  c.json = a.json;
  c.tty = term.tty;
  c.render.width = term.width;
  c.render.long_form = a.long_form;
  c.render.ellipsis = term.ellipsis;
  c.render.color = ar::healthctl::want_color(term.tty, a.no_color, std::getenv("NO_COLOR"), std::getenv("TERM"));
  c.render.user_name = ar::healthctl::user_name_of;
  c.out = &std::cout;
  c.err = &std::cerr;
  c.command = std::move(command);
  return c;
}

int run_command(const Commands& cmd, Args& a, const ar::healthctl::Context& c) {
  using ar::healthctl::AdminAction;
  const auto interval = std::chrono::seconds(a.interval_s);
  if (cmd.ping->parsed()) return ar::healthctl::run_ping(c);
  if (cmd.status->parsed()) return a.watch_flag ? ar::healthctl::run_watch(c, interval) : ar::healthctl::run_status(c);
  if (cmd.check->parsed()) return ar::healthctl::run_check(c, a.now);
  if (cmd.gpus->parsed()) return ar::healthctl::run_gpus(c);
  if (cmd.jobs->parsed()) return ar::healthctl::run_jobs(c);
  if (cmd.explain->parsed()) return ar::healthctl::run_explain(c, a.job_id);
  if (cmd.events->parsed()) return ar::healthctl::run_events(c, a.count);
  if (cmd.watch->parsed()) return ar::healthctl::run_watch(c, interval);
  if (cmd.drain->parsed()) {
    if (a.reason.empty()) a.reason = "drained by " + ar::healthctl::invoking_user() + " via healthctl";
    return ar::healthctl::run_admin(c, {AdminAction::Kind::drain, a.reason, false, {}});
  }
  if (cmd.resume->parsed()) return ar::healthctl::run_admin(c, {AdminAction::Kind::resume, {}, a.force, {}});
  if (cmd.clear->parsed()) return ar::healthctl::run_admin(c, {AdminAction::Kind::clear, {}, false, a.code});
  return exit_code(Outcome::usage);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"healthctl: ask and steer the node health daemon (healthd) of Slurm auto-resume"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ar::healthctl::version_line(), "print healthctl's version and exit");
  app.footer(kFooter);
  Args args;
  Commands commands{};
  add_global_options(app, args);
  add_read_commands(app, args, commands);
  add_admin_commands(app, args, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, the version, or the error and usage hint
    return rc == 0 ? 0 : exit_code(Outcome::usage);
  }

  ar::healthctl::SocketChoice choice;
  if (app.count("--socket") > 0) choice.socket_flag = args.socket_flag;
  if (app.count("--node") > 0) choice.node_flag = args.node_flag;
  choice.socket_env = std::getenv("HEALTHD_SOCKET");
  choice.template_env = std::getenv("HEALTHD_SOCKET_TEMPLATE");
  choice.short_hostname = ar::healthctl::short_hostname();
  auto socket = ar::healthctl::choose_socket(choice);
  if (!socket) {
    std::cerr << "healthctl: " << socket.error() << "\n";
    return exit_code(Outcome::usage);
  }
  const auto context = make_context(args, *socket, app.get_subcommands().front()->get_name());
  return run_command(commands, args, context);
}
