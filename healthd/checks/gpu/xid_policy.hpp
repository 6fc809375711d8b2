// What an NVIDIA XID calls for, as data. The default table follows the buckets of NVIDIA's XID
// catalogue ("Xid Errors", r570 and later): application faults restart the application and leave the
// node alone; GPU faults that a reset cures drain the node; 79 (fallen off the bus) and 160 need a
// reboot. Admins override any entry, and may ask for a count within a window before the action holds
// (e.g. "92 three times in ten minutes drains").
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "checks/check.hpp"

namespace ar::healthd {

// What the node's responder does about an XID rule's action (one of kXidRemedies; its verdict status
// is status_for, checks/check.hpp): reset_gpu drains, until a GPU reset is an action of its own.
Remedy node_action_of(Remedy a);

struct XidRule {
  Remedy action = Remedy::drain;  // one of kXidRemedies
  unsigned count = 1;                    // events within `window` before the action holds
  std::chrono::seconds window{0};        // 0: any time (count 1 needs no window)
  std::string description;               // shown in the result ("fallen off the bus")
};

class XidPolicy {
 public:
  // NVIDIA's catalogue buckets; every XID not listed gets `unknown`.
  static XidPolicy defaults();

  void set(unsigned xid, XidRule rule) { rules_[xid] = std::move(rule); }
  void set_unknown(Remedy a) { unknown_.action = a; }
  const XidRule& rule_for(unsigned xid) const;
  const std::map<unsigned, XidRule>& rules() const { return rules_; }

 private:
  std::map<unsigned, XidRule> rules_;
  XidRule unknown_{Remedy::drain, 1, std::chrono::seconds(0), "XID not in the policy table"};
};

}  // namespace ar::healthd
