// What a check says of what it judged: the four verdicts, in the order the metrics number them.
#pragma once

#include <string>

#include "vocabulary/remedy.hpp"

namespace ar::healthd {

enum class Status {
  ok,      // healthy
  warn,    // worth telling, not worth taking the node out
  fault,   // the node must not run jobs: see the action
  error,   // the check itself failed (crashed, timed out, missing tool): says nothing about the node
};

std::string to_string(Status s);

// Which of two verdicts on one thing shows: a fault outranks a check that could not look, which
// outranks a warning, which outranks ok.
int display_rank(Status s);

// The status a finding carries given the action it calls for: none passes, warn (and an
// application's fault, restart_app) warns, the rest fault.
Status status_for(Remedy a);

}  // namespace ar::healthd
