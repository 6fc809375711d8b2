// One request to the node's healthd and its answer, with what went wrong kept apart: no answer at
// all (the daemon is not there, or silent past the deadline) is not an answer that refuses. The
// transport is ar::UnixClient (include/auto_resume/unix_client.hpp); this adds only the difference.
#pragma once

#include <chrono>
#include <expected>
#include <string>

#include <nlohmann/json.hpp>

#include "exit_codes.hpp"

namespace ar::healthctl {

struct CallError {
  bool answered = false;  // false: no reply at all (connect, send, receive or the reply's framing failed)
  std::string code;       // the error reply's code when answered ("forbidden", "busy", "conflict", ...)
  std::string message;    // why, one line, printable

  Outcome outcome() const { return answered ? error_outcome(code) : Outcome::unreachable; }
  // "refused: an on-demand check is for root only (forbidden)", or "healthd at SOCKET is not
  // answering: connect ...: No such file or directory": the one line healthctl prints.
  std::string describe(const std::string& socket) const;
};

// Sends `request` to the daemon at `socket` and returns its reply's data, within `timeout`.
std::expected<nlohmann::json, CallError> call_daemon(const std::string& socket, const nlohmann::json& request,
                                                     std::chrono::milliseconds timeout);

}  // namespace ar::healthctl
