// Helpers shared by the hardware checks to build their results.
#pragma once

#include <string>

#include "check.hpp"

namespace ar::healthd {

// The status a finding carries given the action it calls for: none passes, warn warns, the rest fault.
inline Status status_for(Action a) {
  switch (a) {
    case Action::none: return Status::ok;
    case Action::warn: return Status::warn;
    case Action::drain:
    case Action::reboot: return Status::fault;
  }
  return Status::fault;
}

inline CheckResult make_result(std::string check, Status status, std::string message) {
  CheckResult r;
  r.check = std::move(check);
  r.status = status;
  r.message = std::move(message);
  r.at = std::chrono::system_clock::now();
  return r;
}

inline CheckResult make_finding(std::string check, std::string code, Action action, std::string message) {
  CheckResult r = make_result(std::move(check), status_for(action), std::move(message));
  r.code = std::move(code);
  r.action = action;
  return r;
}

// "(and 3 more)" for messages naming the first of several findings; empty for one.
inline std::string and_more(std::size_t total) {
  return total > 1 ? " (and " + std::to_string(total - 1) + " more)" : "";
}

}  // namespace ar::healthd
