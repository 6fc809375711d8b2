// Runs a program without a shell, with a deadline and bounded output. Used for scontrol (Slurm
// actions) and, later, admin check scripts: neither may hang healthd.
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <vector>

namespace ar::healthd {

struct ProcessResult {
  int exit_code = -1;     // valid when !timed_out and !signaled
  bool signaled = false;
  bool timed_out = false; // killed at the deadline
  std::string out;        // stdout, at most max_output bytes
  std::string err;        // stderr, at most max_output bytes
};

// argv[0] is looked up in PATH. The error is for failures to start (fork, pipe, exec).
std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv,
                                                      std::chrono::milliseconds timeout,
                                                      std::size_t max_output = 64 * 1024);

}  // namespace ar::healthd
