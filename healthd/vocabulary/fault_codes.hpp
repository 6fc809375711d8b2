// healthd's own marks: the fault codes it gives failures that are not a check's fault (a check's
// code names its own fault: GPU-XID-79, MCE, ...), which journal entries, the admin comment and the
// timeline carry; and the start of its drain reasons, by which its drains are told from others'.
#pragma once

#include <string_view>

namespace ar::healthd {

// The code of a requeue asked by policy for a failure on a healthy node (resume_on_any_failure).
inline constexpr const char* kAppFailure = "APP-FAILURE";
// A job's heartbeat stood still while every node of it checked healthy (engine/stall_watch.hpp).
inline constexpr const char* kStall = "STALL";
// The annotate entry of a node whose own ranks the evidence of a stall points to (engine/rank_evidence.hpp).
inline constexpr const char* kStallEvidence = "STALL-EVIDENCE";
// A requeue of a job whose ranks on the requeueing node ran slower than the rest of the job
// ([policy] straggler_action = "exclude"), at its next complete checkpoint, without that node.
inline constexpr const char* kStraggler = "STRAGGLER";
// A requeue for which the node that asks it stays in service (no drain to wait for, no hold kept
// for it): an application's failure, a stall, a straggler.
inline bool node_stays_in_service(std::string_view code) {
  return code == kAppFailure || code == kStall || code == kStraggler;
}
// The drain of a lemon node: named the suspect of too many stalls ([policy] lemon_suspicions).
inline constexpr const char* kSuspectLemon = "SUSPECT-LEMON";
// The start of every drain reason healthd writes: how its own drains are told from an admin's.
inline constexpr const char* kReasonPrefix = "healthd:";

}  // namespace ar::healthd
