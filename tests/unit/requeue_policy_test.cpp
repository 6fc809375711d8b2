// The requeue policy (healthd/policy/requeue_policy) as a table: the facts of one decision, the
// answer. actions/slurm_actions.cpp carries the answers out; responder_test.cpp shows them on Slurm.
#include <functional>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "policy/requeue_policy.hpp"
#include "vocabulary/fault_codes.hpp"

// A named namespace, not an anonymous one: unity builds put this file beside others with a Row of their own.
namespace requeue_policy_test {

using namespace std::chrono_literals;
using ar::healthd::StallAction;
using ar::healthd::WallTime;
using namespace ar::healthd::policy;

const WallTime kNow = WallTime{} + 1000000s;

// A GPU fault on n1 ended the first attempt of a running job on n1 and n2 that allows requeue; the
// cap is 3, this node's drain is in place and no look at the share is due.
RequeueFacts gpu_fault() {
  RequeueFacts f;
  f.code = "GPU-XID-79";
  f.attempt = 0;
  f.job_restart_count = 0;
  f.job_state = "RUNNING";
  f.job_nodes = {"n1", "n2"};
  f.max_resumes = 3;
  f.node = "n1";
  f.own_drain = true;
  f.burst = std::vector<std::string>{};
  f.now = kNow;
  return f;
}

struct Row {
  const char* name;
  std::function<void(RequeueFacts&)> facts;
  RequeueVerdict verdict;
  WallTime until{};
  std::uint32_t cap = 0;
  bool cancel = false;
};

const Row kTable[] = {
    {"a fault of this node, its drain in place: Slurm's view of the node decides", [](RequeueFacts&) {},
     RequeueVerdict::look_at_node},
    {"another node requeued this attempt already", [](RequeueFacts& f) { f.job_restart_count = 1; },
     RequeueVerdict::requeued_elsewhere},
    {"a stall of a job no longer running", [](RequeueFacts& f) { f.code = ar::healthd::kStall; f.job_state = "COMPLETED"; },
     RequeueVerdict::stall_not_running},
    {"the cap reached, the job still on the faulty node: cancelled",
     [](RequeueFacts& f) { f.attempt = f.job_restart_count = 3; }, RequeueVerdict::cap_reached, {}, 3, true},
    {"the cap reached, the job ended already: not cancelled",
     [](RequeueFacts& f) { f.attempt = f.job_restart_count = 3; f.job_state = "COMPLETING"; },
     RequeueVerdict::cap_reached, {}, 3, false},
    {"the user's cap lowers the admin's", [](RequeueFacts& f) { f.user_cap = 1; f.attempt = f.job_restart_count = 1; },
     RequeueVerdict::cap_reached, {}, 1, true},
    {"the user's cap never raises the admin's", [](RequeueFacts& f) { f.user_cap = 9; f.attempt = f.job_restart_count = 3; },
     RequeueVerdict::cap_reached, {}, 3, true},
    {"step re-runs count against the cap", [](RequeueFacts& f) { f.attempt = f.job_restart_count = 1; f.step_reruns = 2; },
     RequeueVerdict::cap_reached, {}, 3, true},
    {"a re-run another node asked for this failure is not a resume of its own",
     [](RequeueFacts& f) { f.attempt = f.job_restart_count = 1; f.step_reruns = 2; f.rerun_step = true; f.rerun_asked_elsewhere = true; },
     RequeueVerdict::look_at_node},
    {"a cap of 0: never resumed", [](RequeueFacts& f) { f.max_resumes = 0; }, RequeueVerdict::cap_reached, {}, 0, true},
    {"pending (held, or requeued by Slurm): nothing now", [](RequeueFacts& f) { f.job_state = "PENDING"; },
     RequeueVerdict::leave_pending},
    {"a stall under stall_action = cancel", [](RequeueFacts& f) { f.code = ar::healthd::kStall; f.stall_action = StallAction::cancel; },
     RequeueVerdict::stall_cancel},
    {"a stall under stall_action = requeue: the node is healthy, no wait",
     [](RequeueFacts& f) { f.code = ar::healthd::kStall; f.drain_pending = kNow + 10s; }, RequeueVerdict::requeue},
    {"an application failure: the node is healthy, no wait",
     [](RequeueFacts& f) { f.code = ar::healthd::kAppFailure; f.share_look = kNow; f.burst.reset(); }, RequeueVerdict::requeue},
    {"a job that does not allow requeue", [](RequeueFacts& f) { f.job_requeue = false; }, RequeueVerdict::refuse},
    {"a job that does not allow requeue may still re-run its step",
     [](RequeueFacts& f) { f.job_requeue = false; f.rerun_step = true; }, RequeueVerdict::look_at_node},
    {"this node's drain not taken yet: wait for its next try", [](RequeueFacts& f) { f.drain_pending = kNow + 4s; },
     RequeueVerdict::wait_for_drain, kNow + 4s},
    {"a drain overdue: wait the shortest wait, never spin", [](RequeueFacts& f) { f.drain_pending = kNow - 4s; },
     RequeueVerdict::wait_for_drain, kNow + kShortestWait},
    {"a burst of drains, the job on none of the others: wait for the share's second look",
     [](RequeueFacts& f) { f.share_look = kNow + 1s; f.burst = std::vector<std::string>{"n7"}; },
     RequeueVerdict::wait_for_share_look, kNow + 1s},
    {"a burst that holds another node of the job: requeued for that one anyway, no wait",
     [](RequeueFacts& f) { f.share_look = kNow + 1s; f.burst = std::vector<std::string>{"n7", "n2"}; },
     RequeueVerdict::look_at_node},
    {"no other drain around ours: no wait", [](RequeueFacts& f) { f.share_look = kNow + 1s; }, RequeueVerdict::look_at_node},
    {"after a restart the burst is unknown: wait", [](RequeueFacts& f) { f.share_look = kNow + 1s; f.burst.reset(); },
     RequeueVerdict::wait_for_share_look, kNow + 1s},
    {"a look further off than any drain sets (a clock stepped back) holds nothing",
     [](RequeueFacts& f) { f.share_look = kNow + kShareSettle + 1s; f.burst.reset(); }, RequeueVerdict::look_at_node},
    {"no own drain: no look to wait for", [](RequeueFacts& f) { f.own_drain = false; f.share_look = kNow + 1s; f.burst.reset(); },
     RequeueVerdict::look_at_node},
};

// gtest prints a parameter it cannot print as its bytes, and ctest lists that beside every row's
// name: the row's own words are shorter and say which row it is.
void PrintTo(const Row& row, std::ostream* out) { *out << '"' << row.name << '"'; }

class RequeuePolicyTable : public testing::TestWithParam<Row> {};

TEST_P(RequeuePolicyTable, Decides) {
  const Row& row = GetParam();
  auto f = gpu_fault();
  row.facts(f);
  const auto d = decide_requeue(f);
  EXPECT_STREQ(to_string(d.verdict), to_string(row.verdict)) << row.name;
  if (row.verdict == RequeueVerdict::wait_for_drain || row.verdict == RequeueVerdict::wait_for_share_look) {
    EXPECT_EQ(d.until, row.until) << row.name;
  }
  if (row.verdict == RequeueVerdict::cap_reached) {
    EXPECT_EQ(d.cap, row.cap) << row.name;
    EXPECT_EQ(d.cancel, row.cancel) << row.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, RequeuePolicyTable, testing::ValuesIn(kTable),
                         [](const testing::TestParamInfo<Row>& row_info) { return "row" + std::to_string(row_info.index); });

TEST(RequeuePolicy, SlurmsViewOfTheNodeDecidesAFaultOfThisNode) {
  auto f = gpu_fault();
  EXPECT_EQ(after_node_look(f, /*in_service=*/true).verdict, RequeueVerdict::not_requeued);
  EXPECT_EQ(after_node_look(f, false).verdict, RequeueVerdict::requeue);
  f.rerun_step = true;
  EXPECT_EQ(after_node_look(f, false).verdict, RequeueVerdict::try_rerun);
}

TEST(RequeuePolicy, AReRunThatCannotHappenFallsBackToTheRequeueIfTheJobAllowsIt) {
  auto f = gpu_fault();
  f.rerun_step = true;
  EXPECT_EQ(after_rerun_declined(f).verdict, RequeueVerdict::requeue);
  f.job_requeue = false;
  EXPECT_EQ(after_rerun_declined(f).verdict, RequeueVerdict::refuse);
}

TEST(RequeuePolicy, AnApplicationFailureOrAStallGoesStraightToReRunOrRequeue) {
  for (const char* code : {ar::healthd::kAppFailure, ar::healthd::kStall}) {
    auto f = gpu_fault();
    f.code = code;
    f.rerun_step = true;
    EXPECT_EQ(decide_requeue(f).verdict, RequeueVerdict::try_rerun) << code;
  }
}

}  // namespace requeue_policy_test
