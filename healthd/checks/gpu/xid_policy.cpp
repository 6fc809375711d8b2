#include "xid_policy.hpp"

namespace ar::healthd {

Remedy node_action_of(Remedy a) {
  switch (a) {
    case Remedy::none: return Remedy::none;
    case Remedy::warn:
    case Remedy::restart_app: return Remedy::warn;
    case Remedy::notify_only: return Remedy::notify_only;  // kept in, and the admins told once
    case Remedy::reset_gpu: return Remedy::reset_gpu;  // the node is drained, then the GPU reset (a cure chain)
    case Remedy::drain: return Remedy::drain;
    case Remedy::reboot: return Remedy::reboot;
    default: return Remedy::drain;  // not an XID rule's action: the safe side
  }
}

XidPolicy XidPolicy::defaults() {
  using enum Remedy;
  const std::chrono::seconds any{0};
  XidPolicy p;
  auto add = [&](std::initializer_list<unsigned> xids, Remedy a, const char* what) {
    for (unsigned x : xids) p.rules_[x] = {a, 1, any, what};
  };
  // Application-caused: the job restarts, the GPU is fine.
  add({13}, restart_app, "graphics engine exception (application)");
  add({31}, restart_app, "GPU memory page fault (application)");
  add({43}, restart_app, "GPU stopped processing (application)");
  add({45}, restart_app, "preemptive cleanup after an earlier error");
  add({68}, restart_app, "video processor exception");
  add({109}, restart_app, "context switch timeout");
  // Memory events the memory check judges from the counters themselves.
  add({63}, warn, "ECC page retirement or row remapping recorded");
  add({92}, warn, "high single-bit ECC error rate");
  add({154}, warn, "GPU recovery action changed (see the recovery action check)");
  // A GPU reset cures these; the node is drained so the reset (or a replacement) happens idle.
  add({48}, reset_gpu, "double-bit ECC error");
  add({64}, reset_gpu, "ECC page retirement or row remapping failed");
  add({74}, reset_gpu, "NVLink error");
  add({94}, reset_gpu, "contained ECC error");
  add({95}, reset_gpu, "uncontained ECC error");
  add({119}, reset_gpu, "GSP RPC timeout");
  add({120}, reset_gpu, "GSP error");
  add({140}, reset_gpu, "ECC unrecovered error");
  add({61, 62}, reset_gpu, "internal micro-controller halt");
  // Inspect or replace. Every XID not in this table drains too (`unknown`): a missed fault costs the
  // whole job, and an admin can lower any entry.
  add({8}, drain, "GPU stopped processing");
  add({32}, drain, "invalid or corrupted push buffer stream");
  add({38}, drain, "driver firmware error");
  add({69}, drain, "graphics engine class error");
  // Only a reboot brings these back.
  add({79}, reboot, "GPU has fallen off the bus");
  add({160}, reboot, "GPU needs a node reboot");
  return p;
}

const XidRule& XidPolicy::rule_for(unsigned xid) const {
  auto it = rules_.find(xid);
  return it == rules_.end() ? unknown_ : it->second;
}

}  // namespace ar::healthd
