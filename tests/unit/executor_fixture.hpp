// The executors' services (actions/executor.hpp) over a recording Slurm (responder_fixture.hpp), a
// journal and a timeline in a temp dir, recorded notices, the admin's programs answered by the test,
// and node n2 drained by healthd for GPU-XID-79 with a cure under way: for the tests that call an
// executor that is a plain function directly, as the registry lists it.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "actions/executor.hpp"
#include "actions/slurm_actions.hpp"
#include "responder_fixture.hpp"

namespace ar::healthd::test {

struct ExecutorFixture {
  ar::test::TempDir dir;
  FakeSlurm slurm;
  Journal journal{dir / "journal.json"};
  Timeline timeline{dir / "timeline.json"};
  RecordedNotices notices;
  JobOwners owners;
  PolicyConfig policy;
  std::vector<std::vector<std::string>> runs;  // argv of each program started
  std::vector<std::vector<std::string>> envs;
  ProcessResult answer{0, false, false, false, "all tests passed\n", ""};
  std::atomic<bool> release{true};  // false: a program runs until set
  ProgramRuns programs{[this](const std::vector<std::string>& argv, const std::vector<std::string>& env,
                              std::chrono::milliseconds) -> std::expected<ProcessResult, std::string> {
    runs.push_back(argv);
    envs.push_back(env);
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return answer;
  }};
  GpuResets resets;
  ActingMemory memory;
  RequeueFollowUp follow_up;
  std::string boot_id = "boot-1";
  std::size_t jobs_here = 0;
  const std::string node = "n2";  // the services hold a reference to it
  const WallTime now{std::chrono::seconds(100000)};
  static constexpr const char* kReason = "healthd: GPU-XID-79: fallen off the bus";

  ExecutorFixture() {
    slurm.nodes["n2"] = NodeInfo{"n2", "IDLE+DRAIN", kReason, {"debug"}, true};
    journal.own_drain() = OwnDrain{"GPU-XID-79", kReason, now, false, false, CureProgress{}, std::nullopt};
  }
  ExecutorServices services() {
    return {node, policy, slurm, journal, timeline, &notices, owners, programs, resets, memory, follow_up, boot_id, jobs_here};
  }
  // An entry of `kind` about n2's fault, journalled, due now.
  JournalEntry journalled(Action kind) {
    JournalEntry e = due_entry(kind, "n2", "GPU-XID-79", now);
    e.reason = kReason;
    e.id = *journal.add(e);
    return e;
  }
  // Carries `e` out at `at` by the executor the registry lists for its kind (actions/executors.cpp).
  std::expected<Carried, std::string> carry(const JournalEntry& e, WallTime at) {
    const auto* executor = SlurmActions::executor_for(e.kind);
    if (executor == nullptr || executor->function == nullptr) return std::unexpected("no plain executor for " + to_string(e.kind));
    return executor->function(services(), e, at);
  }
  // Carries `e` out until it no longer waits for its run, 5 s at most.
  std::expected<Carried, std::string> carry_until_done(const JournalEntry& e, WallTime at) {
    for (int i = 0; i < 5000; ++i) {
      auto r = carry(e, at);
      if (!r || r->finished) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::unexpected("still running");
  }
};

}  // namespace ar::healthd::test
