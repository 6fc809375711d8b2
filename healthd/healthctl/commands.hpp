// healthctl's commands: each asks the daemon, prints the answer (a table, or the reply as JSON)
// and returns the exit status (exit_codes.hpp). main() only reads the command line.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "render_options.hpp"

namespace ar::healthctl {

struct Context {
  std::string command;  // the subcommand, for messages: "healthctl: check: ..."
  std::string socket;
  std::chrono::milliseconds timeout{5000};
  bool json = false;
  bool tty = false;  // stdout is a terminal (watch redraws in place)
  RenderOptions render;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

int run_ping(const Context& c);
int run_status(const Context& c);
int run_check(const Context& c, bool now);
int run_gpus(const Context& c);
int run_jobs(const Context& c);
int run_explain(const Context& c, std::uint32_t job_id);
int run_events(const Context& c, std::uint32_t limit);

// The status redrawn every `every` until SIGINT (then 0); a daemon that stops answering is shown in
// the frame, and asked again at the next one.
int run_watch(const Context& c, std::chrono::seconds every);

struct AdminAction {
  enum class Kind { drain, resume, clear } kind = Kind::drain;
  std::string reason;  // drain
  bool force = false;  // resume
  std::string code;    // clear
};
// Asks for the action, prints the daemon's word on it, then waits (within the timeout) for the
// `admin` event that says it was carried out.
int run_admin(const Context& c, const AdminAction& a);

}  // namespace ar::healthctl
