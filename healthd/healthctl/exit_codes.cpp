#include "exit_codes.hpp"

#include "auto_resume/protocol.hpp"

namespace ar::healthctl {

int exit_code(Outcome o) {
  switch (o) {
    case Outcome::healthy: return 0;
    case Outcome::warnings: return 1;
    case Outcome::faulty: return 2;
    case Outcome::unreachable: return 3;
    case Outcome::refused: return 4;
    case Outcome::conflict: return 5;
    case Outcome::usage: return 64;
  }
  return 3;
}

Outcome status_outcome(std::string_view status) {
  if (status == "fault") return Outcome::faulty;
  if (status == "warn" || status == "error") return Outcome::warnings;
  return Outcome::healthy;
}

Outcome worse(Outcome a, Outcome b) {
  auto rank = [](Outcome o) { return o == Outcome::faulty ? 2 : o == Outcome::warnings ? 1 : 0; };
  return rank(b) > rank(a) ? b : a;
}

Outcome health_outcome(const nlohmann::json& health) {
  Outcome o = Outcome::healthy;
  if (!health.is_object()) return o;
  if (auto node = health.find("node"); node != health.end() && node->is_object()) {
    if (auto f = node->find("faulty"); f != node->end() && f->is_boolean() && f->get<bool>()) o = Outcome::faulty;
  }
  if (auto checks = health.find("checks"); checks != health.end() && checks->is_array()) {
    for (const auto& r : *checks) {
      if (!r.is_object()) continue;
      if (auto s = r.find("status"); s != r.end() && s->is_string()) o = worse(o, status_outcome(s->get_ref<const std::string&>()));
    }
  }
  return o;
}

Outcome gpus_outcome(const nlohmann::json& gpus) {
  Outcome o = Outcome::healthy;
  if (!gpus.is_array()) return o;
  for (const auto& g : gpus) {
    if (!g.is_object()) continue;
    if (auto h = g.find("health"); h != g.end() && h->is_string()) o = worse(o, status_outcome(h->get_ref<const std::string&>()));
  }
  return o;
}

Outcome error_outcome(std::string_view code) {
  if (code == proto::err::kForbidden || code == proto::err::kBusy) return Outcome::refused;
  if (code == proto::err::kConflict) return Outcome::conflict;
  return Outcome::unreachable;
}

}  // namespace ar::healthctl
