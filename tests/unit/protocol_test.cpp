#include <gtest/gtest.h>

#include "auto_resume/job_comment.hpp"
#include "auto_resume/protocol.hpp"

using namespace ar::proto;

TEST(Protocol, EveryRequestRoundTrips) {
  StepStart s{7, 0, "n1", 1000, true, 2};
  auto r = parse_request(to_json(Request{s}).dump());
  ASSERT_TRUE(r) << r.error().message;
  auto got = std::get<StepStart>(*r);
  EXPECT_EQ(got.job_id, 7u);
  EXPECT_EQ(got.node, "n1");
  EXPECT_EQ(got.uid, 1000u);
  EXPECT_TRUE(got.auto_resume);
  EXPECT_EQ(got.restart_count, 2u);
  EXPECT_FALSE(got.max_resumes);
  s.max_resumes = 4;
  auto capped = parse_request(to_json(Request{s}).dump());
  ASSERT_TRUE(capped);
  EXPECT_EQ(std::get<StepStart>(*capped).max_resumes, 4u);
  EXPECT_EQ(parse_request(R"({"v":1,"type":"step_start","job_id":1,"step_id":0,"node":"n","uid":0,"auto_resume":true,"restart_count":0,"max_resumes":-2})")
                .error().code, err::kBadField);

  TaskExit t{7, kBatchStep, "n2", 3, 768};
  r = parse_request(to_json(Request{t}).dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<TaskExit>(*r).wait_status, 768);
  EXPECT_EQ(std::get<TaskExit>(*r).step_id, kBatchStep);

  r = parse_request(to_json(Request{StepEnd{7, 1, "n3"}}).dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<StepEnd>(*r).step_id, 1u);

  EXPECT_TRUE(std::holds_alternative<Ping>(*parse_request(R"({"v":1,"type":"ping"})")));
  EXPECT_TRUE(std::holds_alternative<StatusQuery>(*parse_request(R"({"v":1,"type":"status"})")));
  EXPECT_TRUE(std::holds_alternative<JobsQuery>(*parse_request(R"({"v":1,"type":"jobs"})")));
}

TEST(Protocol, TheEventsQueryAndTheAdminActionsRoundTripWithTheirLimits) {
  auto events = parse_request(to_json(Request{EventsQuery{20}}).dump());
  ASSERT_TRUE(events);
  EXPECT_EQ(std::get<EventsQuery>(*events).limit, 20u);
  EXPECT_EQ(std::get<EventsQuery>(*parse_request(R"({"v":1,"type":"events"})")).limit, 50u);
  EXPECT_EQ(parse_request(R"({"v":1,"type":"events","limit":"all"})").error().code, err::kBadField);

  auto drain = parse_request(to_json(Request{AdminDrain{"DIMM B2"}}).dump());
  ASSERT_TRUE(drain);
  EXPECT_EQ(std::get<AdminDrain>(*drain).reason, "DIMM B2");
  EXPECT_EQ(parse_request(R"({"v":1,"type":"admin_drain","reason":""})").error().code, err::kBadField);

  auto resume = parse_request(to_json(Request{AdminResume{true}}).dump());
  ASSERT_TRUE(resume);
  EXPECT_TRUE(std::get<AdminResume>(*resume).force);
  EXPECT_FALSE(std::get<AdminResume>(*parse_request(R"({"v":1,"type":"admin_resume"})")).force);
  EXPECT_EQ(parse_request(R"({"v":1,"type":"admin_resume","force":1})").error().code, err::kBadField);

  auto clear = parse_request(to_json(Request{AdminClear{"KMSG-MCE"}}).dump());
  ASSERT_TRUE(clear);
  EXPECT_EQ(std::get<AdminClear>(*clear).code, "KMSG-MCE");
  EXPECT_EQ(parse_request(R"({"v":1,"type":"admin_clear"})").error().code, err::kBadField);
  EXPECT_EQ(parse_request(to_json(Request{AdminClear{std::string(65, 'X')}}).dump()).error().code, err::kBadField);
}

TEST(Protocol, EncodedMessageIsOneLine) {
  StepStart s{1, 2, "node\nwith newline", 0, false, 0};
  auto line = encode(to_json(Request{s}));
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

static std::string error_code_of(std::string_view line) {
  auto r = parse_request(line);
  EXPECT_FALSE(r.has_value()) << line;
  return r ? "" : r.error().code;
}

TEST(Protocol, ErrorsSayWhatIsWrong) {
  EXPECT_EQ(error_code_of("not json"), err::kMalformed);
  EXPECT_EQ(error_code_of("[1,2]"), err::kMalformed);
  EXPECT_EQ(error_code_of(R"({"type":"ping"})"), err::kBadVersion);
  EXPECT_EQ(error_code_of(R"({"v":2,"type":"ping"})"), err::kBadVersion);
  EXPECT_EQ(error_code_of(R"({"v":"1","type":"ping"})"), err::kBadVersion);
  EXPECT_EQ(error_code_of(R"({"v":1,"type":"reboot_everything"})"), err::kUnknownType);
  EXPECT_EQ(error_code_of(R"({"v":1})"), err::kBadField);
  EXPECT_EQ(error_code_of(R"({"v":1,"type":"step_end","job_id":1,"node":"n1"})"), err::kBadField);
  EXPECT_EQ(error_code_of(R"({"v":1,"type":"step_end","job_id":-1,"step_id":0,"node":"n1"})"), err::kBadField);
  EXPECT_EQ(error_code_of(R"({"v":1,"type":"step_end","job_id":4294967296,"step_id":0,"node":"n1"})"), err::kBadField);
  EXPECT_EQ(error_code_of(R"({"v":1,"type":"step_end","job_id":1,"step_id":0,"node":""})"), err::kBadField);
  EXPECT_EQ(error_code_of(std::string(kMaxMessageBytes + 1, ' ')), err::kTooLarge);
}

TEST(Protocol, MissingFieldIsNamed) {
  auto r = parse_request(R"({"v":1,"type":"task_exit","job_id":1,"step_id":0,"node":"n1","task_rank":0})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("wait_status"), std::string::npos);
}

TEST(Protocol, RepliesParse) {
  auto ok = parse_reply(ok_reply({{"x", 1}}).dump());
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)["x"], 1);
  auto bad = parse_reply(error_reply({err::kUnknownType, "nope"}).dump());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, err::kUnknownType);
  EXPECT_EQ(bad.error().message, "nope");
  EXPECT_FALSE(parse_reply("garbage"));
}

// Found by fuzz.protocol: an error reply whose message (or code, or error) is not a string threw
// out of parse_reply; it is an error reply with the fallbacks.
TEST(Protocol, AnErrorReplyOfOtherTypesIsStillAnErrorNeverAThrow) {
  auto number = parse_reply(R"({"ok":false,"error":{"code":"forbidden","message":1}})");
  ASSERT_FALSE(number);
  EXPECT_EQ(number.error().code, "forbidden");
  EXPECT_EQ(number.error().message, "unknown error");
  auto code = parse_reply(R"({"ok":false,"error":{"code":[1],"message":"m"}})");
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().code, err::kInternal);
  EXPECT_EQ(code.error().message, "m");
  auto not_object = parse_reply(R"({"ok":false,"error":"x"})");
  ASSERT_FALSE(not_object);
  EXPECT_EQ(not_object.error().code, err::kInternal);
}

TEST(Protocol, StepNames) {
  EXPECT_EQ(step_name(kBatchStep), "batch");
  EXPECT_EQ(step_name(kExternStep), "extern");
  EXPECT_EQ(step_name(3), "3");
}

TEST(JobComment, RoundTripsAndRefusesOthers) {
  auto c = ar::format_attempt_comment({1, "GPU-XID-79", "n2", "NVRM: Xid (PCI:0000:17:00): 79, off the bus"});
  EXPECT_EQ(c, "auto-resume: attempt 1 ended: GPU-XID-79 on n2: NVRM: Xid (PCI:0000:17:00): 79, off the bus");
  auto p = ar::parse_attempt_comment(c);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->attempt, 1u);
  EXPECT_EQ(p->code, "GPU-XID-79");
  EXPECT_EQ(p->node, "n2");
  EXPECT_EQ(p->message, "NVRM: Xid (PCI:0000:17:00): 79, off the bus");
  EXPECT_FALSE(ar::parse_attempt_comment("user comment"));
  EXPECT_FALSE(ar::parse_attempt_comment("auto-resume: not resumed: the cap of 3 resumes is reached"));
  EXPECT_LE(ar::format_attempt_comment({1, "X", "n", std::string(1000, 'm')}).size(), ar::kMaxCommentBytes);
}

TEST(JobComment, ControlCharactersReachNoTerminal) {
  // A heartbeat path (the user's) or a kernel-log line in the message: CSI and OSC in their C1 form
  // (U+009B, U+009D), ESC, BEL, a stray byte.
  const std::string message = "heartbeat /ckpt/\xc2\x9b" "2J\xc2\x9d" "0;t\x07 \x1b[31m \x9b has not moved";
  const auto c = ar::format_attempt_comment({2, "STALL", "n1", message});
  EXPECT_EQ(c, "auto-resume: attempt 2 ended: STALL on n1: heartbeat /ckpt/\\u009b2J\\u009d0;t\\u0007 \\u001b[31m \\x9b "
               "has not moved");
  EXPECT_TRUE(ar::text::is_clean_utf8(c));
  ASSERT_TRUE(ar::parse_attempt_comment(c));
  // Every line healthd writes passes the same way, not only the attempt line.
  const auto merged = ar::merge_admin_comment("admin: keep\n", "auto-resume: not resumed: \xc2\x9b" "2J\nsecond");
  EXPECT_EQ(merged, "admin: keep\nauto-resume: not resumed: \\u009b2J second");
}

TEST(JobComment, TheLineIsCutBetweenCodePoints) {
  // Two paddings: whatever the prefix's length, one of them puts a two-byte character across the
  // limit.
  for (std::size_t pad = 0; pad < 2; ++pad) {
    std::string message(pad, 'a');
    for (int i = 0; i < 200; ++i) message += "\xc3\xa9";  // é
    const auto c = ar::format_attempt_comment({1, "X", "n", message});
    EXPECT_LE(c.size(), ar::kMaxCommentBytes) << pad;
    EXPECT_TRUE(ar::text::is_clean_utf8(c)) << pad;
    EXPECT_TRUE(c.ends_with("\xc3\xa9...")) << pad;
  }
}
