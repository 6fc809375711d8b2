// An annotate entry carried out (actions/annotate_executor.cpp): the job's auto-resume line in its
// admin comment, the admin's other lines kept; a job gone is nothing to annotate. Today's requeues
// write the line themselves; this entry is carried out from journals written before them.
#include <gtest/gtest.h>

#include "responder_fixture.hpp"

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

}  // namespace annotate_executor_test
