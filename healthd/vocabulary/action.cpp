#include "vocabulary/action.hpp"

namespace ar::healthd {

std::string to_string(Action a) {
  switch (a) {
    case Action::none: return "none";
    case Action::warn: return "warn";
    case Action::restart_app: return "restart_app";
    case Action::reset_gpu: return "reset_gpu";
    case Action::drain: return "drain";
    case Action::reboot: return "reboot";
    case Action::requeue: return "requeue";
    case Action::resume: return "resume";
    case Action::annotate: return "annotate";
    case Action::signal: return "signal";
    case Action::hook: return "hook";
    case Action::replace: return "replace";
    case Action::deep_check: return "deep_check";
  }
  return "none";
}

std::optional<Action> parse_action(const std::string& s) {
  for (auto a : {Action::none, Action::warn, Action::restart_app, Action::reset_gpu, Action::drain, Action::reboot,
                 Action::requeue, Action::resume, Action::annotate, Action::signal, Action::hook, Action::replace,
                 Action::deep_check})
    if (to_string(a) == s) return a;
  return std::nullopt;
}

std::string action_names(std::span<const Action> set) {
  std::string out;
  for (auto a : set) out += (out.empty() ? "" : ", ") + to_string(a);
  return out;
}

}  // namespace ar::healthd
