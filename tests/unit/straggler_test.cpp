// Stragglers while a job runs (issue 34): the step a rank's file holds, read as the owner would and
// bounded; each rank's pace over the window against the median of the job's ranks on other nodes;
// and the whole way through two responders sharing one Slurm: the slow rank's node is reported and,
// under straggler_action = "exclude", the job is requeued without it at its next complete checkpoint.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "collectors/heartbeat_reader.hpp"
#include "engine/straggler_watch.hpp"
#include "responder_fixture.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;
using namespace std::chrono_literals;

// Named: unity batches put this file beside others with helpers of the same names.
namespace straggler_test {

const FileTime f0 = FileTime(std::chrono::seconds(1'800'000'000));
const StallClock::time_point t0 = StallClock::time_point(std::chrono::hours(1000));

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(RankStep, AStepOrAStepAndItsBusySecondsAndNothingElse) {
  auto s = parse_rank_step("1234\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, 1234u);
  EXPECT_FALSE(s->busy_s);
  s = parse_rank_step("  77 0.520 \n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, 77u);
  ASSERT_TRUE(s->busy_s);
  EXPECT_DOUBLE_EQ(*s->busy_s, 0.52);
  for (const char* bad : {"", " \n", "-1", "+3", "12a", "1 2 3", "1 -0.5", "1 nan", "1 inf", "1 1e3", "1 90000",
                          "99999999999999999999", "0x10", "1,5", "step 3"})
    EXPECT_FALSE(parse_rank_step(bad)) << "'" << bad << "'";
}

TEST(RankStep, ReadFromTheOwnersRegularRankFilesOnlyWithoutFollowingLinksOrOpeningFifos) {
  ar::test::TempDir dir;
  const auto d = dir.path() / "beats";
  write_file(d / "rank-0", "41\n");
  write_file(d / "rank-1", "");                       // only touched: a beat, no step
  write_file(d / "rank-2", std::string(200, '7'));    // larger than a step: not read
  write_file(d / "elsewhere", "99\n");
  std::filesystem::create_symlink(d / "elsewhere", d / "rank-3");
  ASSERT_EQ(::mkfifo((d / "rank-4").c_str(), 0600), 0);  // opened, it would block the reader
  write_file(d / "ckpt-1" / "COMPLETE", "");
  write_file(d / "ckpt-2" / "weights", "");           // no COMPLETE yet
  const auto r = read_heartbeat(d.string(), ::geteuid(), std::chrono::system_clock::now());
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps.at(0).step, 41u);
  EXPECT_EQ(r.ranks.size(), 3u) << "rank-0, rank-1, rank-2: regular files; the link and the FIFO are not ranks";
  EXPECT_FALSE(r.ranks.contains(3));
  EXPECT_FALSE(r.ranks.contains(4));
  ASSERT_TRUE(r.newest_complete) << "ckpt-1 holds COMPLETE";
  // Another owner's files count for nothing, their steps included.
  const auto other = read_heartbeat(d.string(), ::geteuid() + 1, std::chrono::system_clock::now());
  EXPECT_TRUE(other.steps.empty());
  EXPECT_FALSE(other.newest_complete);
}

// Feeds a watch `seconds` of a job whose rank r finishes a step every `step_s[r]` seconds; looked at
// every `sweep` seconds, with `busy` the ranks' own busy times when given.
struct Job {
  std::vector<double> step_s;
  bool busy = false;
  std::map<std::uint32_t, RankStep> at(double t) const {
    std::map<std::uint32_t, RankStep> m;
    for (std::uint32_t r = 0; r < step_s.size(); ++r) {
      const auto n = static_cast<std::uint64_t>(t / step_s[r]);
      RankStep s{f0 + std::chrono::duration_cast<FileTime::duration>(std::chrono::duration<double>(n * step_s[r])), n};
      if (busy) s.busy_s = step_s[r];
      m[r] = s;
    }
    return m;
  }
};

std::optional<StragglerFinding> run(StragglerWatch& w, const Job& job, std::vector<std::uint32_t> mine, double seconds,
                                    std::chrono::seconds window = 60s, double share = 0.15, double sweep = 5) {
  std::optional<StragglerFinding> last;
  for (double t = 0; t <= seconds; t += sweep) {
    const auto now = t0 + std::chrono::duration_cast<StallClock::duration>(std::chrono::duration<double>(t));
    w.observe(7, 0, job.at(t), mine, window, now);
    last = w.judge(7, mine, share, window, now);
  }
  return last;
}

TEST(StragglerWatch, ARankAtHalfSpeedIsFoundOnceTheWindowIsCovered) {
  StragglerWatch w;
  const Job job{{1.0, 1.0, 1.0, 2.0}};
  EXPECT_FALSE(run(w, job, {3}, 55)) << "not before a whole window";
  const auto f = run(w, job, {3}, 70);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->slow.size(), 1u);
  EXPECT_EQ(f->slow[0].rank, 3u);
  EXPECT_NEAR(f->slow[0].step_s, 2.0, 0.01);
  EXPECT_NEAR(f->median_s, 1.0, 0.01);
  EXPECT_NEAR(f->over(), 1.0, 0.02);
  EXPECT_EQ(f->others, 3u);
  EXPECT_NE(f->text().find("rank 3 2 s a step against 1 s, the median of 3 rank(s) on other nodes (+100%)"),
            std::string::npos) << f->text();
}

TEST(StragglerWatch, TheShareDecides) {
  for (auto [slow, found] : {std::pair{1.5, true}, {1.2, true}, {1.1, false}, {1.0, false}}) {
    StragglerWatch w;
    EXPECT_EQ(run(w, Job{{1.0, 1.0, 1.0, slow}}, {3}, 70).has_value(), found) << slow << "x";
  }
  // The fast ones are never stragglers, nor is a node of ranks at the job's pace.
  StragglerWatch w;
  EXPECT_FALSE(run(w, Job{{1.0, 1.0, 1.0, 2.0}}, {0}, 70));
}

TEST(StragglerWatch, BusyTimesTellTheRankEveryOtherWaitsFor) {
  // In lockstep every rank's pace is the slowest's; the busy times say which one that is.
  StragglerWatch w;
  const auto f = run(w, Job{{1.0, 1.0, 1.6}, true}, {2}, 70);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->busy_times);
  EXPECT_NEAR(f->slow[0].step_s, 1.6, 1e-9);
  EXPECT_NE(f->text().find("of its own work"), std::string::npos) << f->text();
}

TEST(StragglerWatch, ALoopStartedOverOrANewAttemptStartsThePaceOver) {
  StragglerWatch w;
  ASSERT_TRUE(run(w, Job{{1.0, 1.0, 2.0}}, {2}, 70));
  // A new attempt: the window starts again.
  w.observe(7, 1, Job{{1.0, 1.0, 2.0}}.at(80), {2}, 60s, t0 + 80s);
  EXPECT_FALSE(w.judge(7, {2}, 0.15, 60s, t0 + 80s));
  w.keep_only({});
  EXPECT_FALSE(w.judge(7, {2}, 0.15, 60s, t0 + 200s));
}

TEST(StragglerWatch, AHugeJobIsSampledAndItsOwnRanksAlwaysKept) {
  StragglerWatch w;
  std::vector<double> paces(5000, 1.0);
  paces[4321] = 2.0;
  const auto f = run(w, Job{paces}, {4321}, 70);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->slow[0].rank, 4321u);
  EXPECT_LE(f->others, StragglerWatch::kMaxSampledRanks);
}

TEST(StragglerWatch, WhatTheChecksSayOfTheNode) {
  CheckResult clocks{"gpu.clocks", Status::warn, "GPU-CLOCKS", "GPU 2 clocks held at 900 MHz"};
  CheckResult pcie{"gpu.pcie", Status::ok};
  CheckResult efa{"efa", Status::ok};
  CheckResult kmsg{"kernel_log", Status::ok};
  CheckResult neuron{"neuron", Status::ok};
  neuron.applicable = false;
  EXPECT_EQ(what_checks_say({clocks, pcie, efa, kmsg, neuron}),
            "gpu.clocks GPU-CLOCKS: GPU 2 clocks held at 900 MHz; gpu.pcie, efa pass");
  EXPECT_EQ(what_checks_say({pcie, efa}), "gpu.pcie, efa pass");
  EXPECT_EQ(what_checks_say({kmsg}), "no GPU, EFA or Neuron check applies on this node");
}

// Two nodes of job 7: rank 0 on n1 (its batch node) steps every second, rank 1 on n2 every
// `slow_step` seconds; each node's responder sweeps every second.
struct TwoNodes {
  ar::test::TempDir dir;
  FakeSlurm slurm;
  PolicyConfig policy;
  RecordedNotices notices;
  using Node = ResponderNode;
  std::unique_ptr<Node> n1, n2;
  double slow_step = 2.0;
  // Each rank's progress, moved on each second by its pace: its step, and when it wrote it.
  double progress[2] = {0, 0};
  RankStep written[2] = {{f0, 0}, {f0, 0}};
  std::optional<FileTime> checkpoint;  // the newest complete checkpoint in /ckpt
  WallTime now = WallTime(std::chrono::seconds(1'800'000'000));
  WallTime start = now;

  explicit TwoNodes(StragglerAction action) {
    policy.check_interval = 1s;
    policy.check_deadline = 2s;
    policy.straggler_window = 20s;
    policy.straggler_action = action;
    for (const char* n : {"n1", "n2", "n3"}) slurm.nodes[n] = NodeInfo{n, "IDLE", "", {"debug"}};
    slurm.jobs[7] = JobInfo{7, "RUNNING", "", 0, "n[1-2]", ""};
    slurm.jobs[7].nodes = {"n1", "n2"};
    slurm.jobs[7].partition = "debug";
    for (auto* node : {&n1, &n2}) {
      *node = std::make_unique<Node>(node == &n1 ? "n1" : "n2", dir.path());
      auto& n = **node;
      n.responder = std::make_unique<Responder>(n.name, policy, slurm, n.journal, n.timeline);
      n.responder->set_notices(&notices, 3);
      n.responder->set_heartbeat_reader([this](const std::string& path, std::uint32_t) {
        HeartbeatReading r;
        r.found = true;
        if (path == "/ckpt") {
          r.newest_complete = checkpoint;
          return r;
        }
        for (std::uint32_t rank = 0; rank < 2; ++rank) {
          r.ranks[rank] = written[rank].at;
          r.steps[rank] = written[rank];
          r.newest = r.newest ? std::max(*r.newest, written[rank].at) : written[rank].at;
        }
        return r;
      });
      n.responder->set_stall_clock([this] { return t0 + (now - start); });
    }
  }
  LocalJob job(bool batch_here, std::uint32_t rank) {
    LocalJob j{7, slurm.jobs[7].restart_count, true};
    j.uid = 1000;
    j.heartbeat = ar::proto::Heartbeat{"/beats", 600, 600, true, "/ckpt"};
    j.batch_here = batch_here;
    j.tasks = {{rank, 100 + rank}};
    return j;
  }
  void seconds(int count) {
    for (int i = 0; i < count; ++i) {
      for (int rank = 0; rank < 2; ++rank) {
        progress[rank] += 1.0 / (rank == 1 ? slow_step : 1.0);
        if (static_cast<std::uint64_t>(progress[rank]) > written[rank].step)
          written[rank] = {f0 + (now - start), static_cast<std::uint64_t>(progress[rank])};
      }
      slurm.clock = now;
      for (auto* n : {n2.get(), n1.get()}) {
        n->responder->on_sweep({kernel_log_result(false)}, {job(n == n1.get(), n == n1.get() ? 0 : 1)}, std::nullopt, now);
        n->responder->run_due(now);
        n->responder->follow_requeued(now);
      }
      now += 1s;
    }
  }
};

TEST(Stragglers, TheNodeOfARankAtHalfSpeedIsReportedWithinTheWindowAndOnlyOnce) {
  TwoNodes c(StragglerAction::report);
  c.seconds(15);
  EXPECT_EQ(c.notices.count(NoticeKind::straggler), 0) << "not before the window is covered";
  c.seconds(15);
  ASSERT_EQ(c.notices.count(NoticeKind::straggler), 1);
  const auto* n = c.notices.first(NoticeKind::straggler);
  EXPECT_EQ(n->node, "n2");
  EXPECT_EQ(n->job_id, 7u);
  EXPECT_EQ(n->action, "report");
  // 1.9 s, not 2: the window's first step (step 0 to 1) took the slow rank 1 s.
  EXPECT_NE(n->message.find("ranks on n2 straggle: rank 1 1.9 s a step against 1 s, the median of 1 rank(s) on other "
                            "nodes (+90%), over 20 s"),
            std::string::npos) << n->message;
  EXPECT_NE(n->message.find("checks: no GPU, EFA or Neuron check applies"), std::string::npos) << n->message;
  EXPECT_TRUE(c.n2->timeline.has_event(7, "straggler"));
  EXPECT_FALSE(c.n1->timeline.has_event(7, "straggler")) << "n1's rank keeps the job's pace";
  EXPECT_EQ(c.n2->responder->stragglers(), 1u);
  EXPECT_EQ(c.n2->responder->status()["stragglers"]["jobs"], 1);
  EXPECT_FALSE(c.n2->responder->status()["stragglers"].dump().contains("7")) << "no job id in the status everyone sees";
  c.seconds(30);
  EXPECT_EQ(c.notices.count(NoticeKind::straggler), 1) << "once an attempt";
  EXPECT_EQ(c.slurm.count("requeue 7"), 0) << "report: nothing more is done";
  // Back at the job's pace: said, and the count goes down.
  c.slow_step = 1.0;
  c.seconds(45);
  EXPECT_EQ(c.n2->responder->stragglers(), 0u);
  EXPECT_TRUE(c.n2->timeline.has_event(7, "straggler no more"));
}

TEST(Stragglers, ExcludeRequeuesWithoutTheNodeOnlyOnceTheNextCheckpointIsComplete) {
  TwoNodes c(StragglerAction::exclude);
  c.checkpoint = f0;  // one before the straggler is found: not the "next"
  c.seconds(40);
  ASSERT_EQ(c.notices.count(NoticeKind::straggler), 1);
  EXPECT_EQ(c.notices.first(NoticeKind::straggler)->action, "exclude");
  EXPECT_TRUE(c.n2->timeline.has_event(7, "straggler: exclude at checkpoint"));
  EXPECT_EQ(c.slurm.count("requeue 7"), 0) << "no checkpoint since: the job runs on";
  c.checkpoint = f0 + 100s;
  c.seconds(5);
  ASSERT_EQ(c.slurm.count("requeue 7"), 1);
  EXPECT_EQ(c.slurm.jobs[7].excluded, std::vector<std::string>{"n2"});
  const auto& comment = c.slurm.jobs[7].admin_comment;
  EXPECT_NE(comment.find("auto-resume: attempt 1 ended: STRAGGLER on n2: "), std::string::npos) << comment;
  EXPECT_NE(comment.find("suspect n2 kept off the next attempt"), std::string::npos) << comment;
  EXPECT_TRUE(c.n2->timeline.has_event(7, "checkpoint complete"));
}

TEST(Stragglers, ExcludeNeverLeavesTheJobUnableToRunNorActsWithoutCheckpoints) {
  TwoNodes c(StragglerAction::exclude);
  c.slurm.nodes.erase("n3");  // n1 alone would be left for a job of two nodes
  c.checkpoint = f0;
  c.seconds(40);
  c.checkpoint = f0 + 100s;
  c.seconds(5);
  // Not requeued at the checkpoint: the job could not run without n2, and a restart onto the
  // same nodes would only lose it time.
  EXPECT_EQ(c.slurm.count("requeue 7"), 0);
  EXPECT_TRUE(c.slurm.jobs[7].excluded.empty());
  EXPECT_TRUE(c.n2->timeline.has_event(7, "no node kept off"));

  TwoNodes no_checkpoints(StragglerAction::exclude);
  no_checkpoints.seconds(60);
  EXPECT_EQ(no_checkpoints.notices.count(NoticeKind::straggler), 1);
  EXPECT_EQ(no_checkpoints.slurm.count("requeue 7"), 0) << "no checkpoint ever completes: never requeued";
}

}  // namespace straggler_test
