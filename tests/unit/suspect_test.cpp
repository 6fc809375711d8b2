// The node behind a hang (issue 34): per-rank heartbeats read from a real directory, the tasks of a
// job read from a /proc tree of the test's own, each node's evidence about itself, the evidence lines
// of the admin comment, the decision of which nodes a stalled job's next attempt is kept off, and the
// whole way through two responders (the stalled rank's node and the batch script's) sharing one Slurm.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "auto_resume/job_comment.hpp"
#include "collectors/heartbeat_reader.hpp"
#include "collectors/process_tree.hpp"
#include "engine/rank_evidence.hpp"
#include "policy/suspect_policy.hpp"
#include "responder_fixture.hpp"
#include "state/job_registry.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

// Named, so that a unity batch holding this file beside another test's (stall_watch_test's t0 and f0)
// never sees two definitions of one name.
namespace suspect_test {

namespace {

const FileTime f0 = FileTime(std::chrono::seconds(1'800'000'000));
const StallClock::time_point t0 = StallClock::time_point(std::chrono::hours(1000));

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A /proc/PID of the test's own: its stat line (state, CPU ticks, start time) and its children.
void fake_process(const std::filesystem::path& proc, std::uint32_t pid, char state, std::uint64_t ticks,
                  std::vector<std::uint32_t> children = {}, std::string comm = "python3", std::uint64_t start = 5000) {
  std::string stat = std::to_string(pid) + " (" + comm + ") " + state + " 1 1 1 0 -1 4194560 0 0 0 0 " +
                     std::to_string(ticks) + " 0 0 0 20 0 1 0 " + std::to_string(start) + " 0 0";
  write(proc / std::to_string(pid) / "stat", stat + "\n");
  std::string kids;
  for (auto c : children) kids += std::to_string(c) + " ";
  write(proc / std::to_string(pid) / "task" / std::to_string(pid) / "children", kids);
}

}  // namespace

TEST(ProcessTree, CpuTimeOfTheTaskAndEveryProcessUnderItAndWhichSitInD) {
  ar::test::TempDir proc;
  const long hz = ::sysconf(_SC_CLK_TCK);
  fake_process(proc.path(), 100, 'S', 0, {101});                     // the shell slurmstepd forked: waits
  fake_process(proc.path(), 101, 'R', 3 * hz, {102}, "python3 (train) x");  // a name with ') ' in it
  fake_process(proc.path(), 102, 'D', 1 * hz);
  auto s = sample_process_tree(proc.path(), 100);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.processes, 3u);
  EXPECT_DOUBLE_EQ(s.cpu_s, 4.0);
  EXPECT_EQ(s.uninterruptible, std::vector<std::uint32_t>{102});
  EXPECT_EQ(s.start_ticks, 5000u);
}

TEST(ProcessTree, APidNowNamingAnotherProcessIsNotTheTask) {
  ar::test::TempDir proc;
  fake_process(proc.path(), 100, 'S', 0, {}, "python3", 7777);  // started after the task we knew
  EXPECT_FALSE(sample_process_tree(proc.path(), 100, 5000).found);
  EXPECT_FALSE(sample_process_tree(proc.path(), 999).found);
}

TEST(ProcessTree, ACycleInTheChildrenListsIsReadOnce) {
  ar::test::TempDir proc;
  fake_process(proc.path(), 100, 'S', 1, {101});
  fake_process(proc.path(), 101, 'S', 1, {100, 101});
  auto s = sample_process_tree(proc.path(), 100);
  EXPECT_EQ(s.processes, 2u);
}

TEST(RankHeartbeats, EachRanksOwnFileByItsTimeOthersFilesAndLinksNot) {
  ar::test::TempDir dir;
  for (int r : {0, 1, 2}) write(dir / ("rank-" + std::to_string(r)), "");
  write(dir / "rank-x", "");
  write(dir / "rank-01", "");
  std::filesystem::create_symlink(dir / "rank-0", dir / "rank-7");
  auto at = [](int s) { return std::filesystem::file_time_type::clock::now() - std::chrono::seconds(s); };
  std::filesystem::last_write_time(dir / "rank-0", at(30));
  std::filesystem::last_write_time(dir / "rank-1", at(10));
  auto r = read_heartbeat(dir.path().string(), ::getuid(), std::chrono::system_clock::now());
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.ranks.size(), 3u) << "rank-x, rank-01 and a link are no rank's file";
  ASSERT_TRUE(r.ranks.contains(0) && r.ranks.contains(1));
  EXPECT_LT(r.ranks[0], r.ranks[1]);
  auto other = read_heartbeat(dir.path().string(), ::getuid() + 1, std::chrono::system_clock::now());
  EXPECT_TRUE(other.ranks.empty()) << "only the job owner's files count";
  EXPECT_EQ(rank_of_heartbeat_file("rank-4294967"), 4294967u);
  EXPECT_FALSE(rank_of_heartbeat_file("rank-9999999999"));
  EXPECT_FALSE(rank_of_heartbeat_file("rank-"));
}

TEST(RankEvidence, ATaskWhoseCpuTimeStoodStillPointsHereABusyOneDoesNot) {
  const std::map<std::uint32_t, FileTime> ranks{{0, f0}, {1, f0 + 1s}};
  auto idle = judge_ranks(ranks, {{1, 4242, true, 0.0, 10.0, false}}, 20s);
  EXPECT_TRUE(idle.points_here);
  EXPECT_NE(idle.text().find("rank 1: CPU time did not move in 10 s (+0.00 s)"), std::string::npos) << idle.text();
  auto busy = judge_ranks(ranks, {{0, 4243, true, 9.8, 10.0, false}}, 20s);
  EXPECT_FALSE(busy.points_here) << busy.text();
  EXPECT_NE(busy.text().find("rank 0: busy (+9.8 s CPU in 10 s)"), std::string::npos) << busy.text();
}

TEST(RankEvidence, ARankThatStoppedFirstOrNeverBeatOrSitsInDPointsHere) {
  const std::map<std::uint32_t, FileTime> ranks{{0, f0}, {1, f0 + 30s}};
  auto first = judge_ranks(ranks, {{0, 4242, true, 9.0, 10.0, false}}, 20s);  // busy, but 30 s behind
  EXPECT_TRUE(first.points_here);
  EXPECT_NE(first.text().find("rank 0: stopped first (last beat 30 s before the job's newest)"), std::string::npos);
  auto close = judge_ranks({{0, f0}, {1, f0 + 4s}}, {{0, 4242, true, 9.0, 10.0, false}}, 20s);
  EXPECT_FALSE(close.points_here) << "within a quarter of the stall time of the newest: " << close.text();
  EXPECT_TRUE(judge_ranks(ranks, {{5, 4242, true, 9.0, 10.0, false}}, 20s).points_here) << "rank 5 never beat";
  auto d = judge_ranks(ranks, {{1, 4242, true, 9.0, 10.0, true}}, 20s);
  EXPECT_TRUE(d.points_here);
  EXPECT_NE(d.text().find("uninterruptible sleep (D)"), std::string::npos);
  auto unseen = judge_ranks(ranks, {{1, 4242, true, 0.0, 0.0, false}}, 20s);
  EXPECT_FALSE(unseen.points_here) << "one look is no window to judge CPU time over";
}

TEST(RankEvidence, AGpuTheTaskHoldsAtZeroWhileTheJobsOtherGpusHereAreBusyPointsHere) {
  const std::map<std::uint32_t, FileTime> ranks{{0, f0}, {1, f0}, {2, f0}};
  // Ranks 0 and 1 here, each spinning on its CPU; rank 1's worker (pid 501) holds GPU 1.
  std::vector<TaskActivity> tasks{{0, 400, true, 9.0, 10.0, false, {400, 401}}, {1, 500, true, 9.0, 10.0, false, {500, 501}}};
  const std::vector<GpuActivity> gpus{{0, "00000000:18:00.0", 100, {401}},
                                      {1, "00000000:2A:00.0", 0, {501}},
                                      {2, "00000000:3A:00.0", 0, {9999}}};  // another job's, idle
  auto e = judge_ranks(ranks, tasks, 20s, gpus);
  EXPECT_TRUE(e.points_here) << e.text();
  EXPECT_NE(e.text().find("rank 1: GPU 1 (00000000:2A:00.0) at 0% while the job's other GPUs here are busy (100%)"),
            std::string::npos) << e.text();
  EXPECT_EQ(e.text().find("GPU 0"), std::string::npos) << "the busy one is no evidence: " << e.text();
  EXPECT_EQ(e.text().find("GPU 2"), std::string::npos) << "another job's GPU says nothing of this one: " << e.text();
  // Every GPU of the job idle (the job stopped together), or NVML unable to tell: no GPU evidence.
  auto all_idle = judge_ranks(ranks, tasks, 20s, {{0, "a", 0, {401}}, {1, "b", 0, {501}}});
  EXPECT_FALSE(all_idle.points_here) << all_idle.text();
  auto unknown = judge_ranks(ranks, tasks, 20s, {{0, "a", 100, {401}}, {1, "b", std::nullopt, {501}}});
  EXPECT_FALSE(unknown.points_here) << unknown.text();
}

TEST(TaskSampler, TheWindowEndsAtTheLastLookAndATaskInDCountsOnlyAtTwoLooksInARow) {
  ar::test::TempDir proc;
  const long hz = ::sysconf(_SC_CLK_TCK);
  TaskSampler sampler(proc.path());
  const std::vector<LocalTask> tasks{{3, 100}};
  for (int i = 0; i <= 20; ++i) {
    // Busy for the first 10 s (a core's worth), then stopped: CPU time stands still, the task in D.
    fake_process(proc.path(), 100, i >= 19 ? 'D' : 'S', static_cast<std::uint64_t>(std::min(i, 10)) * hz);
    sampler.look(tasks, t0 + std::chrono::seconds(i));
    if (i == 19) {
      EXPECT_FALSE(sampler.activity(tasks, 5s)[0].uninterruptible) << "one look in D";
    }
  }
  auto a = sampler.activity(tasks, 5s);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].found);
  EXPECT_TRUE(a[0].uninterruptible);
  EXPECT_DOUBLE_EQ(a[0].window_s, 5.0);
  EXPECT_DOUBLE_EQ(a[0].cpu_s, 0.0);
  EXPECT_DOUBLE_EQ(sampler.activity(tasks, 15s)[0].cpu_s, 5.0);
  sampler.look({}, t0 + 30s);
  EXPECT_FALSE(sampler.activity(tasks, 5s)[0].found) << "a task no longer listed is forgotten";
}

TEST(EvidenceLines, RoundTripOneLinePerNodeOfTheAttemptAndOthersKept) {
  const std::string line = ar::format_evidence_line({2, "n2", "rank 1: CPU time did not move in 10 s"});
  EXPECT_EQ(line, "auto-resume evidence: attempt 2 on n2: rank 1: CPU time did not move in 10 s");
  std::string comment = ar::merge_admin_comment("ticket 42", line);
  comment = ar::merge_admin_comment(comment, ar::format_evidence_line({2, "n3", "rank 2: D"}));
  comment = ar::merge_admin_comment(comment, ar::format_evidence_line({2, "n2", "rank 1: again"}));
  comment = ar::merge_admin_comment(comment, "auto-resume: attempt 2 ended: STALL on n1: x");
  auto lines = ar::evidence_lines(comment, 2);
  ASSERT_EQ(lines.size(), 2u) << comment;
  EXPECT_EQ(lines[0].node, "n3");
  EXPECT_EQ(lines[1].node, "n2");
  EXPECT_EQ(lines[1].text, "rank 1: again");
  EXPECT_EQ(comment.rfind("ticket 42\n", 0), 0u) << comment;
  EXPECT_EQ(ar::auto_resume_line(comment), "auto-resume: attempt 2 ended: STALL on n1: x");
  EXPECT_TRUE(ar::evidence_lines(comment, 1).empty());
  // The next attempt's evidence replaces the last one's.
  comment = ar::merge_admin_comment(comment, ar::format_evidence_line({3, "n1", "rank 0: D"}));
  EXPECT_TRUE(ar::evidence_lines(comment, 2).empty()) << comment;
  EXPECT_EQ(ar::evidence_lines(comment, 3).size(), 1u);
  for (const char* bad : {"auto-resume evidence: attempt x on n2: t", "auto-resume evidence: attempt 2 on : t",
                          "auto-resume evidence: attempt 2 on n2 n3: t", "auto-resume evidence: attempt 2 on n2"})
    EXPECT_FALSE(ar::parse_evidence_line(bad)) << bad;
}

namespace {

policy::SuspectFacts facts(std::vector<std::string> pointing, std::size_t job_nodes = 4, std::size_t cluster = 8) {
  policy::SuspectFacts f;
  for (std::size_t i = 1; i <= job_nodes; ++i) f.job_nodes.push_back("n" + std::to_string(i));
  for (std::size_t i = 1; i <= cluster; ++i) f.node_table.push_back(NodeInfo{"n" + std::to_string(i), "IDLE", "", {"debug"}});
  for (const auto& n : pointing) f.evidence.push_back({1, n, "rank 1: CPU time did not move in 10 s"});
  f.partition = "debug";
  return f;
}

}  // namespace

TEST(SuspectPolicy, OneNodePointedAtIsKeptOffWithWhatTheJobExcludedAlready) {
  auto f = facts({"n2"});
  f.excluded = {"n7"};
  auto v = policy::judge_suspects(f);
  ASSERT_EQ(v.suspects.size(), 1u);
  EXPECT_EQ(v.exclude, (std::vector<std::string>{"n7", "n2"}));
  EXPECT_EQ(v.why, "suspect n2 kept off the next attempt");
}

TEST(SuspectPolicy, NothingPointingOrEveryNodeOrMoreThanTheShareNamesNoOne) {
  EXPECT_TRUE(policy::judge_suspects(facts({})).exclude.empty());
  EXPECT_EQ(policy::judge_suspects(facts({})).why, "no node's evidence points anywhere: no suspect");
  auto all = policy::judge_suspects(facts({"n1", "n2"}, 2));
  EXPECT_TRUE(all.exclude.empty());
  EXPECT_TRUE(all.suspects.empty());
  EXPECT_NE(all.why.find("2 of the job's 2 nodes show the same (n1,n2): the job stopped together"), std::string::npos) << all.why;
  EXPECT_TRUE(policy::judge_suspects(facts({"n1", "n2"}, 4)).exclude.empty()) << "2 of 4 is more than a quarter";
  auto eight = facts({"n1", "n2"}, 8, 16);
  EXPECT_EQ(policy::judge_suspects(eight).exclude.size(), 2u) << "2 of 8 is a quarter";
}

TEST(SuspectPolicy, TheMostNamedIsTheShareOfTheJobsNodesAtLeastOne) {
  EXPECT_EQ(policy::most_suspects(2, 0.25), 1u);
  EXPECT_EQ(policy::most_suspects(8, 0.25), 2u);
  EXPECT_EQ(policy::most_suspects(4, 0.9), 3u);
  EXPECT_EQ(policy::most_suspects(0, 0.25), 1u);
}

TEST(SuspectPolicy, OnlyNodesOfTheJobCountOnceEach) {
  auto f = facts({"n9", "n2", "n2"});
  auto v = policy::judge_suspects(f);
  EXPECT_EQ(v.exclude, std::vector<std::string>{"n2"});
}

TEST(SuspectPolicy, ANodeTheJobAsksForByNameIsNamedButNeverKeptOff) {
  auto f = facts({"n2"});
  f.required = {"n1", "n2"};
  auto v = policy::judge_suspects(f);
  EXPECT_TRUE(v.exclude.empty());
  ASSERT_EQ(v.suspects.size(), 1u) << "still the suspect: its node keeps the suspicion";
  EXPECT_EQ(v.why, "suspect n2 not kept off the job: it asks for n2 by name (--nodelist)");
}

TEST(SuspectPolicy, NeverLeavesTheJobUnableToRun) {
  auto f = facts({"n2"}, 4, 4);  // a job of 4 nodes on a partition of 4
  auto v = policy::judge_suspects(f);
  EXPECT_TRUE(v.exclude.empty());
  EXPECT_NE(v.why.find("not kept off the job: partition debug would have 3 node(s) in service for a job of 4 (reported only)"),
            std::string::npos) << v.why;
  auto drained = facts({"n2"}, 4, 5);
  drained.node_table[4].drain = true;  // n5, the one spare, is drained
  EXPECT_TRUE(policy::judge_suspects(drained).exclude.empty());
  auto down = facts({"n2"}, 4, 5);
  down.node_table[4].down = true;
  EXPECT_TRUE(policy::judge_suspects(down).exclude.empty());
  auto elsewhere = facts({"n2"}, 4, 5);
  elsewhere.node_table[4].partitions = {"gpu"};
  EXPECT_TRUE(policy::judge_suspects(elsewhere).exclude.empty());
  EXPECT_EQ(policy::judge_suspects(facts({"n2"}, 4, 5)).exclude, std::vector<std::string>{"n2"});
}

namespace {

// Job 7 on n1 (its batch script) and n2, one rank each, per-rank heartbeats in /beats; two daemons on
// one fake Slurm, each with its own /proc tree, moving one clock.
struct TwoNodes {
  ar::test::TempDir dir;
  FakeSlurm slurm;
  PolicyConfig policy;
  struct Node : ResponderNode {
    using ResponderNode::ResponderNode;
    ar::test::TempDir proc;  // its /proc, where its task lives
  };
  std::unique_ptr<Node> n1, n2;
  std::map<std::uint32_t, FileTime> beats{{0, f0}, {1, f0}};
  WallTime now = WallTime(std::chrono::seconds(1'800'000'000));
  WallTime start = now;
  std::uint64_t cpu1 = 0, cpu2 = 0;  // each task's CPU ticks

  TwoNodes() {
    policy.check_interval = 1s;
    policy.check_deadline = 2s;
    policy.max_resumes = 100;  // one job stands for the several jobs of the lemon tests
    for (const char* n : {"n1", "n2", "n3", "n4"}) slurm.nodes[n] = NodeInfo{n, "IDLE", "", {"debug"}};
    slurm.jobs[7] = JobInfo{7, "RUNNING", "", 0, "n[1-2]", ""};
    slurm.jobs[7].nodes = {"n1", "n2"};
    slurm.jobs[7].partition = "debug";
    for (auto* node : {&n1, &n2}) {
      *node = std::make_unique<Node>(node == &n1 ? "n1" : "n2", dir.path());
      auto& n = **node;
      n.responder = std::make_unique<Responder>(n.name, policy, slurm, n.journal, n.timeline);
      n.responder->set_heartbeat_reader([this](const std::string&, std::uint32_t) {
        HeartbeatReading r;
        r.found = true;
        r.ranks = beats;
        for (const auto& [rank, at] : beats) r.newest = r.newest ? std::max(*r.newest, at) : at;
        return r;
      });
      n.responder->set_stall_clock([this] { return t0 + (now - start); });
      n.responder->set_proc_root(n.proc.path());
    }
  }
  LocalJob job(bool batch_here, std::uint32_t rank) {
    LocalJob j{7, slurm.jobs[7].restart_count, true};
    j.uid = 1000;
    j.heartbeat = ar::proto::Heartbeat{"/beats", 4, 4, true};
    j.batch_here = batch_here;
    j.tasks = {{rank, 100 + rank}};
    return j;
  }
  // One second: both ranks beat while `moving`; rank 0 (n1) spins while `n1_busy`, rank 1 (n2) while `n2_busy`.
  void second(bool moving, bool n1_busy, bool n2_busy) {
    const long hz = ::sysconf(_SC_CLK_TCK);
    if (moving)
      for (auto& [rank, at] : beats) at = f0 + std::chrono::duration_cast<std::chrono::seconds>(now - start);
    if (n1_busy) cpu1 += static_cast<std::uint64_t>(hz);
    if (n2_busy) cpu2 += static_cast<std::uint64_t>(hz);
    fake_process(n1->proc.path(), 100, 'R', cpu1);
    fake_process(n2->proc.path(), 101, n2_busy ? 'R' : 'S', cpu2);
    slurm.clock = now;
    for (auto* n : {n2.get(), n1.get()}) {
      n->responder->on_sweep({kernel_log_result(false)}, {job(n == n1.get(), n == n1.get() ? 0 : 1)}, std::nullopt, now);
      n->responder->run_due(now);
      n->responder->follow_requeued(now);
    }
    now += 1s;
  }
  // An incident: both ranks beat for 5 s, then stop, n1's and n2's tasks busy or not, until the job
  // is requeued once more (40 s at most).
  void hang(bool n1_busy, bool n2_busy) {
    for (int i = 0; i < 5; ++i) second(true, true, true);
    const auto requeues = slurm.count("requeue 7");
    for (int i = 0; i < 40 && slurm.count("requeue 7") == requeues; ++i) second(false, n1_busy, n2_busy);
  }
};

}  // namespace

TEST(Suspects, TheRankThatStoppedWhileTheOthersSpinKeepsItsNodeOffTheNextAttempt) {
  TwoNodes c;
  c.hang(true, false);
  ASSERT_EQ(c.slurm.count("requeue 7"), 1) << c.slurm.jobs[7].admin_comment;
  const auto& comment = c.slurm.jobs[7].admin_comment;
  EXPECT_NE(comment.find("auto-resume evidence: attempt 1 on n2: rank 1: CPU time did not move"), std::string::npos) << comment;
  EXPECT_EQ(comment.find("evidence: attempt 1 on n1"), std::string::npos) << "n1's rank was busy: " << comment;
  EXPECT_NE(comment.find("auto-resume: attempt 1 ended: STALL on n1: "), std::string::npos) << comment;
  EXPECT_NE(comment.find("suspect n2 kept off the next attempt"), std::string::npos) << comment;
  EXPECT_EQ(c.slurm.count("exclude 7 n2"), 1) << "with the release of the requeue hold";
  EXPECT_EQ(c.slurm.jobs[7].excluded, std::vector<std::string>{"n2"});
  EXPECT_TRUE(c.n1->timeline.has_event(7, "suspect n2"));
  EXPECT_TRUE(c.n1->timeline.has_event(7, "kept off"));
  EXPECT_TRUE(c.n2->timeline.has_event(7, "stall evidence: points here"));
  EXPECT_TRUE(c.n1->timeline.has_event(7, "stall evidence: nothing here"));
  EXPECT_EQ(c.slurm.count("drain n2"), 0) << "a suspicion alone drains nothing";
}

TEST(Suspects, EveryRankStoppingTogetherIsAPlainStallRequeue) {
  TwoNodes c;
  c.hang(false, false);
  ASSERT_EQ(c.slurm.count("requeue 7"), 1);
  const auto& comment = c.slurm.jobs[7].admin_comment;
  EXPECT_EQ(ar::evidence_lines(comment, 1).size(), 2u) << comment;
  EXPECT_NE(comment.find("the job stopped together"), std::string::npos) << comment;
  EXPECT_TRUE(c.slurm.jobs[7].excluded.empty());
  EXPECT_TRUE(c.n1->timeline.has_event(7, "no node kept off"));
}

TEST(Suspects, ABusyJobWhoseRanksAllSpinNamesNoOne) {
  TwoNodes c;
  c.hang(true, true);
  ASSERT_EQ(c.slurm.count("requeue 7"), 1);
  const auto& comment = c.slurm.jobs[7].admin_comment;
  EXPECT_TRUE(ar::evidence_lines(comment, 1).empty());
  EXPECT_FALSE(ar::suspects_line(comment, 1)) << "a plain STALL, nothing more said: " << comment;
  EXPECT_EQ(comment.rfind("auto-resume: attempt 1 ended: STALL on n1: heartbeat /beats has not moved", 0), 0u) << comment;
  EXPECT_TRUE(c.slurm.jobs[7].excluded.empty());
}

TEST(Suspects, TheDecisionIsSavedBeforeTheRequeueAndCarriedOutAfterARestart) {
  TwoNodes c;
  c.slurm.completing_reads = 1000;  // the requeued job stays COMPLETING: the release waits
  c.hang(true, false);
  ASSERT_EQ(c.slurm.count("requeue 7"), 1);
  EXPECT_EQ(c.slurm.count("exclude 7 n2"), 0) << "not before the job is pending";
  // n1's healthd restarts here: its journal holds the decision, and the evidence is not read again.
  c.slurm.jobs[7].admin_comment = "auto-resume: attempt 1 ended: STALL on n1: x";
  c.n1->journal = Journal(c.dir / "n1-journal.json");
  ASSERT_TRUE(c.n1->journal.load());
  c.n1->responder = std::make_unique<Responder>("n1", c.policy, c.slurm, c.n1->journal, c.n1->timeline);
  c.slurm.completing_left[7] = 1;
  for (int i = 0; i < 3; ++i) c.second(false, true, false);
  EXPECT_EQ(c.slurm.count("exclude 7 n2"), 1);
  EXPECT_EQ(c.slurm.jobs[7].excluded, std::vector<std::string>{"n2"});
}

TEST(TaskStarts, KeptPerStepAcrossARestartBoundedAndOnlyForTheRunningAttempt) {
  ar::test::TempDir dir;
  JobRegistry r(dir / "jobs.json");
  const auto now = std::chrono::system_clock::now();
  r.step_started({5, 0, "n1", 1000, true, 0, std::nullopt, ar::proto::Heartbeat{"/beats", 60, 60, true}}, now);
  r.task_started({5, 0, "n1", 3, 4242}, now);
  r.task_started({5, 0, "n1", 3, 4242}, now);  // said twice: kept once
  r.task_started({5, 0, "n1", 4, 4243}, now);
  ASSERT_TRUE(r.save());
  JobRegistry back(dir / "jobs.json");
  ASSERT_TRUE(back.load());
  const auto& job = back.jobs().at(5);
  EXPECT_EQ(job.running_tasks(), (std::vector<TaskStartRecord>{{3, 4242}, {4, 4243}}));
  EXPECT_TRUE(job.heartbeat && job.heartbeat->per_rank);
  r.step_started({5, 0, "n1", 1000, true, 1, std::nullopt, std::nullopt}, now);
  EXPECT_TRUE(r.jobs().at(5).running_tasks().empty()) << "the next attempt's tasks are its own";
}

TEST(SuspectsLine, RoundTripAndOneLineKept) {
  const std::string line = ar::format_suspects_line({1, {"n2", "n3"}, "suspect n2,n3 kept off the next attempt"});
  EXPECT_EQ(line, "auto-resume suspects: attempt 1: n2,n3: suspect n2,n3 kept off the next attempt");
  std::string comment = ar::merge_admin_comment("auto-resume: attempt 1 ended: STALL on n1: x", line);
  comment = ar::merge_admin_comment(comment, ar::format_suspects_line({2, {}, "no node's evidence points anywhere"}));
  EXPECT_FALSE(ar::suspects_line(comment, 1)) << "the next attempt's line replaces the last one's: " << comment;
  auto two = ar::suspects_line(comment, 2);
  ASSERT_TRUE(two);
  EXPECT_TRUE(two->nodes.empty());
  EXPECT_EQ(ar::auto_resume_line(comment), "auto-resume: attempt 1 ended: STALL on n1: x");
  auto back = ar::suspects_line(line, 1);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->nodes, (std::vector<std::string>{"n2", "n3"}));
  EXPECT_FALSE(ar::suspects_line("auto-resume suspects: attempt 1: n2,,n3: x", 1));
}

namespace {

Suspicion suspicion(WallTime at, std::uint32_t job, std::uint32_t uid) { return {at, job, uid, "rank 1: CPU time did not move"}; }

}  // namespace

TEST(LemonPolicy, ThreeSuspicionsInTheWindowFromThreeUsersDrainTwoOrOneUserDoNot) {
  PolicyConfig p;
  const WallTime now = WallTime(std::chrono::seconds(1'800'000'000));
  std::vector<Suspicion> s{suspicion(now - 48h, 1, 1001), suspicion(now - 24h, 2, 1002)};
  EXPECT_FALSE(policy::judge_lemon(s, p, now).drain);
  s.push_back(suspicion(now, 3, 1001));
  auto same_user = policy::judge_lemon(s, p, now);
  EXPECT_FALSE(same_user.drain) << "one user's jobs count once: " << same_user.why;
  EXPECT_EQ(same_user.counted, 2u);
  s.push_back(suspicion(now, 4, 1003));
  auto lemon = policy::judge_lemon(s, p, now);
  EXPECT_TRUE(lemon.drain);
  EXPECT_EQ(lemon.why, "suspect of 3 stall(s) within 7 day(s) in jobs of as many users");
  EXPECT_EQ(lemon.jobs, "1, 2, 4") << "kept apart: healthctl status shows `why` to every user";
  EXPECT_FALSE(policy::judge_lemon(s, p, now + 24h * 6 + 1h).drain) << "the two oldest left the window";
  p.lemon_distinct_users = false;
  EXPECT_TRUE(policy::judge_lemon({suspicion(now, 1, 7), suspicion(now, 2, 7), suspicion(now, 3, 7)}, p, now).drain);
  p.lemon_suspicions = 0;
  EXPECT_FALSE(policy::judge_lemon(s, p, now).drain) << "0: never";
}

namespace {

// The stalled rank's node (n2) at the end of one incident of TwoNodes: how its own daemon kept it.
void stall_on_n2(TwoNodes& c, std::uint32_t uid) {
  c.slurm.jobs[7].user_id = uid;
  const auto requeues = c.slurm.count("requeue 7");
  c.hang(true, false);
  ASSERT_EQ(c.slurm.count("requeue 7"), requeues + 1) << ::testing::PrintToString(c.slurm.calls);
  for (int i = 0; i < 5; ++i) c.second(true, true, true);  // running again (here, for the test's sake)
}

}  // namespace

TEST(Suspects, TheNodeNamedKeepsItsSuspicionAcrossARestartAndShowsItInItsStatus) {
  TwoNodes c;
  stall_on_n2(c, 1001);
  ASSERT_EQ(c.n2->journal.suspicions().size(), 1u);
  EXPECT_EQ(c.n2->journal.suspicions()[0].job_id, 7u);
  EXPECT_EQ(c.n2->journal.suspicions()[0].uid, 1001u);
  EXPECT_TRUE(c.n1->journal.suspicions().empty()) << "n1 was not named";
  EXPECT_TRUE(c.n2->timeline.has_event(7, "suspected"));
  Journal reloaded(c.dir / "n2-journal.json");
  ASSERT_TRUE(reloaded.load());
  ASSERT_EQ(reloaded.suspicions().size(), 1u);
  EXPECT_EQ(reloaded.suspicions()[0].why.rfind("rank 1: CPU time did not move", 0), 0u) << reloaded.suspicions()[0].why;
  const auto status = c.n2->responder->status();
  ASSERT_TRUE(status.contains("suspicions")) << status.dump();
  EXPECT_EQ(status["suspicions"]["in_window"], 1);
  EXPECT_EQ(c.n2->responder->suspicions(c.now), 1u);
  EXPECT_FALSE(c.n1->responder->status().contains("suspicions"));
}

TEST(Suspects, ALemonSuspectedInThreeUsersJobsIsDrainedForTheDeepCheckHeldWithoutOne) {
  TwoNodes c;
  for (std::uint32_t uid : {1001u, 1001u}) stall_on_n2(c, uid);
  EXPECT_EQ(c.slurm.count("drain n2"), 0) << "one user's jobs alone never make a lemon";
  for (std::uint32_t uid : {1002u, 1003u}) stall_on_n2(c, uid);
  for (int i = 0; i < 3; ++i) c.second(true, true, true);
  EXPECT_EQ(c.slurm.count("drain n2"), 1);
  EXPECT_NE(c.slurm.nodes["n2"].reason.find("healthd: SUSPECT-LEMON: suspect of 3 stall(s) within 7 day(s) in jobs of as many users"),
            std::string::npos) << c.slurm.nodes["n2"].reason;
  EXPECT_NE(c.slurm.nodes["n2"].reason.find("no deep check set: held for an admin"), std::string::npos);
  EXPECT_TRUE(c.n2->journal.suspicions().empty()) << "they led to the drain";
  ASSERT_TRUE(c.n2->journal.own_drain());
  EXPECT_TRUE(c.n2->journal.own_drain()->held);
}

}  // namespace suspect_test
