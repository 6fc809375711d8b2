// An annotate entry carried out (actions/annotate_executor.cpp): the job's auto-resume line in its
// admin comment, the admin's other lines kept; a job gone is nothing to annotate. Today's requeues
// write the line themselves; this entry is carried out from journals written before them.
#include <gtest/gtest.h>

#include "auto_resume/job_comment.hpp"
#include "responder_fixture.hpp"
#include "vocabulary/fault_codes.hpp"

using namespace ar::healthd;
using namespace ar::healthd::test;

namespace annotate_executor_test {

JournalEntry annotate_entry(std::uint32_t job, WallTime now) {
  JournalEntry e;
  e.kind = Action::annotate;
  e.node = "n2";
  e.job_id = job;
  e.reason = "auto-resume: attempt 1 ended: GPU-XID-79 on n2";
  e.created = e.next_try = now;
  return e;
}

TEST(AnnotateExecutor, WritesTheLineAndKeepsTheAdminsOwn) {
  Fixture f;
  f.slurm.jobs[7].admin_comment = "site: billing code 42";
  ASSERT_TRUE(f.journal.add(annotate_entry(7, f.now)));
  f.responder->run_due(f.now);
  EXPECT_EQ(f.slurm.jobs[7].admin_comment, "site: billing code 42\nauto-resume: attempt 1 ended: GPU-XID-79 on n2");
  EXPECT_EQ(f.slurm.count("comment 7"), 1);
  EXPECT_TRUE(f.journal.pending().empty());
}

TEST(AnnotateExecutor, AJobGoneIsFinishedWithNoCall) {
  Fixture f;
  ASSERT_TRUE(f.journal.add(annotate_entry(99, f.now)));
  f.responder->run_due(f.now);
  EXPECT_TRUE(f.slurm.calls.empty());
  EXPECT_TRUE(f.journal.pending().empty());
}

TEST(AnnotateExecutor, SlurmAwayIsTriedAgain) {
  Fixture f;
  ASSERT_TRUE(f.journal.add(annotate_entry(7, f.now)));
  f.slurm.answering = false;
  f.responder->run_due(f.now);
  ASSERT_EQ(f.journal.pending().size(), 1u);
  f.slurm.answering = true;
  f.responder->run_due(f.now + std::chrono::minutes(5));
  EXPECT_EQ(f.slurm.count("comment 7"), 1);
  EXPECT_TRUE(f.journal.pending().empty());
}

// A node's evidence about a stalled job (issue 34): written while the share of the job's nodes that
// may be named is not yet exceeded by the lines there, and not once it is (the decision is then
// "stopped together" whatever it says).
JournalEntry evidence_entry(const std::string& node, WallTime now) {
  JournalEntry e = annotate_entry(7, now);
  e.node = node;
  e.code = kStallEvidence;
  e.reason = ar::format_evidence_line({1, node, "rank 3: CPU time did not move in 60 s (+0.00 s); checks pass"});
  return e;
}

TEST(AnnotateExecutor, EvidenceIsWrittenWhileTheShareOfTheJobsNodesAllowsNamingIt) {
  PolicyConfig p;
  p.suspect_max_share = 0.9;  // of 4 nodes, 3 may be named: a third line must still be written
  Fixture f(p);
  f.slurm.jobs[7].nodes = {"n1", "n2", "n3", "n4"};
  f.slurm.jobs[7].admin_comment = ar::format_evidence_line({1, "n1", "a"}) + "\n" + ar::format_evidence_line({1, "n3", "b"});
  ASSERT_TRUE(f.journal.add(evidence_entry("n2", f.now)));
  f.responder->run_due(f.now);
  EXPECT_EQ(ar::evidence_lines(f.slurm.jobs[7].admin_comment, 1).size(), 3u) << f.slurm.jobs[7].admin_comment;

  Fixture g;  // the default share, 0.25: of 4 nodes one may be named; two lines are already past it
  g.slurm.jobs[7].nodes = {"n1", "n2", "n3", "n4"};
  g.slurm.jobs[7].admin_comment = ar::format_evidence_line({1, "n1", "a"}) + "\n" + ar::format_evidence_line({1, "n3", "b"});
  ASSERT_TRUE(g.journal.add(evidence_entry("n2", g.now)));
  g.responder->run_due(g.now);
  EXPECT_EQ(g.slurm.count("comment 7"), 0);
  EXPECT_TRUE(g.journal.pending().empty());
}

}  // namespace annotate_executor_test
