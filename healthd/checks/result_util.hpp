// Helpers shared by the hardware checks to build their results.
#pragma once

#include <string>

#include "checks/check.hpp"

namespace ar::healthd {

inline CheckResult make_result(std::string check, Status status, std::string message) {
  CheckResult r;
  r.check = std::move(check);
  r.status = status;
  r.message = std::move(message);
  r.at = std::chrono::system_clock::now();
  return r;
}

// A pass that says nothing about the node: what the check judges is not there and not expected (no
// EFA device on a node that expects none). Shown as "n/a", not "ok".
inline CheckResult not_applicable_result(std::string check, std::string message) {
  CheckResult r = make_result(std::move(check), Status::ok, std::move(message));
  r.applicable = false;
  return r;
}

inline CheckResult make_finding(std::string check, std::string code, Remedy action, std::string message) {
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
