// The fault codes healthd gives failures that are not a check's fault (a check's code names its
// own fault: GPU-XID-79, MCE, ...). Journal entries, the admin comment and the timeline carry them.
#pragma once

namespace ar::healthd {

// The code of a requeue asked by policy for a failure on a healthy node (resume_on_any_failure).
inline constexpr const char* kAppFailure = "APP-FAILURE";
// A job's heartbeat stood still while every node of it checked healthy (engine/stall_watch.hpp).
inline constexpr const char* kStall = "STALL";

}  // namespace ar::healthd
