// Runs a program without a shell, with a deadline and bounded output. Used for scontrol (Slurm
// actions), admin check scripts and dcgmi: none may hang healthd, and none may inherit more of it
// than it needs.
//
// What a child gets: stdin /dev/null, stdout and stderr to pipes, no other file descriptor (so a
// leaked socket can never keep the daemon's socket alive after the daemon is killed), default signal
// dispositions and an empty signal mask, its own process group, and a fixed environment
// (child_environment()). argv[0] must be an absolute path: names are resolved once, when the config
// is loaded (resolve_program), never against a PATH at run time.
//
// At the deadline the child's whole tree is killed: its process group, every descendant found
// through /proc (also those that called setsid), and every process reparented to healthd that still
// holds the child's output pipes. healthd must be a child subreaper (become_child_subreaper) for
// descendants whose parent died to come back to it; a background reaper waits for those.
#pragma once

#include <chrono>
#include <expected>
#include <functional>
#include <string>
#include <vector>

namespace ar::healthd {

struct ProcessResult {
  int exit_code = -1;     // valid when !timed_out and !signaled
  bool signaled = false;
  bool timed_out = false; // killed at the deadline (or when `cancel` said so: see cancelled)
  bool cancelled = false; // killed because the caller's `cancel` answered true
  std::string out;        // stdout, at most max_output bytes
  std::string err;        // stderr, at most max_output bytes
};

// The first line a program printed (stdout, then stderr; `stderr_first`: the other way), trimmed and
// sanitized to 200 bytes: what a reason or a message quotes of it. Empty when it printed nothing.
std::string first_output_line(const ProcessResult& r, bool stderr_first = false);

// The only PATH a child sees, and the only one program names are resolved against.
inline constexpr const char* kChildPath = "/usr/sbin:/usr/bin:/sbin:/bin";

// Variables passed from healthd's own environment to every child, when set: the Slurm clients need
// SLURM_CONF to find a cluster configured outside /etc/slurm.
inline const std::vector<std::string> kDefaultChildEnv = {"SLURM_CONF", "TZ"};

// A name is a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*).
bool is_env_name(const std::string& name);

// Fixes the environment of every later child: PATH=kChildPath, LANG=C, LC_ALL=C, HOME=/, and each of
// kDefaultChildEnv and `extra_names` that is set in healthd's environment now, with its value now.
// Without a call, children get the defaults (taken at the first run).
void set_child_environment(const std::vector<std::string>& extra_names);

// The environment the next child gets, as NAME=value entries.
std::vector<std::string> child_environment();

// `name` as a program to run: an absolute path is kept; a name without '/' is looked up in
// kChildPath; anything else (a relative path) is refused. The program must be an executable file.
std::expected<std::string, std::string> resolve_program(const std::string& name);

// Makes orphaned descendants of healthd's children reparent to healthd instead of init
// (PR_SET_CHILD_SUBREAPER), so a timeout can find and kill them and the reaper can wait for them.
std::expected<void, std::string> become_child_subreaper();

// How long a child killed at its deadline may take to disappear before run_process gives up on it.
inline constexpr std::chrono::milliseconds kKillGrace{2000};

// argv[0] must be absolute. The error is for failures to start (pipe, spawn) and for a child that
// did not exit within kKillGrace after SIGKILL (stuck in the kernel): its pid is then left to the
// background reaper. `extra_env` (NAME=value) is added to child_environment() for this child.
// `cancel`, when set, is asked every 100 ms: true kills the child's tree as the deadline would.
std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv,
                                                      std::chrono::milliseconds timeout,
                                                      std::size_t max_output = 64 * 1024,
                                                      const std::vector<std::string>& extra_env = {},
                                                      const std::function<bool()>& cancel = {});

}  // namespace ar::healthd
