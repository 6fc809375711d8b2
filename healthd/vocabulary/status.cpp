#include "vocabulary/status.hpp"

namespace ar::healthd {

std::string to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::warn: return "warn";
    case Status::fault: return "fault";
    case Status::error: return "error";
  }
  return "error";
}

int display_rank(Status s) {
  switch (s) {
    case Status::ok: return 0;
    case Status::warn: return 1;
    case Status::error: return 2;
    case Status::fault: return 3;
  }
  return 2;
}

Status status_for(Remedy a) {
  if (a == Remedy::none) return Status::ok;
  return keeps_node_in(a) ? Status::warn : Status::fault;
}

}  // namespace ar::healthd
