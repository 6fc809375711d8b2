// What healthctl's exit status says. One mapping for every command, so a script (or Nagios, whose
// plugin convention the first three follow) reads the same number the same way everywhere:
//
//   0  healthy (or, for a command that reports no health: done)
//   1  warnings: a check warns, or a check could not run (its "error" says nothing about the node)
//   2  faulty: a check reports a fault, or the node is still held faulty
//   3  the daemon is unreachable: not running, not answering in time, or no usable answer
//   4  refused: the daemon answered "forbidden" (root only) or "busy" (try later)
//   5  conflict: an admin action that does not fit the node's state (the message says why)
//  64  usage: the command line is wrong (EX_USAGE of sysexits.h)
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace ar::healthctl {

enum class Outcome { healthy, warnings, faulty, unreachable, refused, conflict, usage };

// The exit status of an outcome: the one place the numbers above are written.
int exit_code(Outcome o);

// The health of a node from the status reply's "health" object: the worst of its checks' results
// ("fault" > "warn" = "error" > the rest) and of the node's verdict (node.faulty).
Outcome health_outcome(const nlohmann::json& health);

// The health of the GPUs of a status reply's health.gpus: the worst of their "health" words.
Outcome gpus_outcome(const nlohmann::json& gpus);

// The health of one result's status word ("ok", "warn", "fault", "error"; anything else: healthy).
Outcome status_outcome(std::string_view status);

// The worse of two health outcomes.
Outcome worse(Outcome a, Outcome b);

// What an error reply's code means to the caller: "forbidden" and "busy" are refusals, "conflict"
// a conflict; any other code, or none (no answer at all), is an unreachable daemon.
Outcome error_outcome(std::string_view error_code);

}  // namespace ar::healthctl
