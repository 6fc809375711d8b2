// Outside text made safe where it enters (issue 10, items 2 and 8): valid UTF-8, no control
// characters, cuts at code points.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "auto_resume/protocol.hpp"
#include "checks/dcgm/dcgm_check.hpp"
#include "checks/ec2/ec2_check.hpp"
#include "collectors/nvml/nvml_collector.hpp"
#include "temp_dir.hpp"
#include "text/text.hpp"

using namespace ar::healthd;
using namespace std::string_literals;

namespace {
// Valid UTF-8 is what nlohmann's strict dump() accepts.
bool dumps_strictly(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}
}  // namespace

TEST(Sanitize, KeepsPrintableTextAndMultiByteCharacters) {
  EXPECT_EQ(sanitize("GPU 3: Xid 79, fallen off the bus"), "GPU 3: Xid 79, fallen off the bus");
  EXPECT_EQ(sanitize("température 85 °C, 温度, \xF0\x9F\x94\xA5"), "température 85 °C, 温度, \xF0\x9F\x94\xA5");
  EXPECT_EQ(sanitize(R"(C:\path)"), R"(C:\path)");
  EXPECT_EQ(sanitize(""), "");
}

TEST(Sanitize, EscapesInvalidBytesOneByOne) {
  auto s = sanitize("mce: [Hardware Error]: bad \xff\xfe");
  EXPECT_EQ(s, R"(mce: [Hardware Error]: bad \xff\xfe)");
  EXPECT_TRUE(dumps_strictly(s));
  EXPECT_FALSE(dumps_strictly("bad \xff\xfe"));  // what used to end the event loop
  EXPECT_EQ(sanitize("\x80"), R"(\x80)");                       // a stray continuation byte
  EXPECT_EQ(sanitize("\xC0\xAF"), R"(\xc0\xaf)");               // an overlong '/'
  EXPECT_EQ(sanitize("\xE0\x80\xAF"), R"(\xe0\x80\xaf)");       // an overlong 3-byte form
  EXPECT_EQ(sanitize("\xED\xA0\x80"), R"(\xed\xa0\x80)");       // a UTF-16 surrogate
  EXPECT_EQ(sanitize("\xF4\x90\x80\x80"), R"(\xf4\x90\x80\x80)");  // above U+10FFFF
  EXPECT_EQ(sanitize("\xE2\x82" "A"), R"(\xe2\x82A)");         // a sequence cut short
  EXPECT_EQ(sanitize("end \xE2\x82"), R"(end \xe2\x82)");
}

TEST(Sanitize, ControlCharactersNeverPassThrough) {
  EXPECT_EQ(sanitize("\x1b[31mred\x1b[0m\x07"), R"(\u001b[31mred\u001b[0m\u0007)");
  EXPECT_EQ(sanitize("a\x7f" "b"), R"(a\u007fb)");
  EXPECT_EQ(sanitize("nul\0byte"s), R"(nul\u0000byte)");
  EXPECT_EQ(sanitize("one\ttwo\r\nthree"), "one two  three");
  EXPECT_EQ(sanitize("c1 \xC2\x9B" "31m \xC2\x85"), R"(c1 \u009b31m \u0085)");
  EXPECT_EQ(sanitize("\xC2\xA0"), "\xC2\xA0");  // U+00A0 is not a control
  // Every byte value, alone: the output is valid and holds no control byte.
  for (int b = 0; b < 256; ++b) {
    auto s = sanitize(std::string(1, static_cast<char>(b)));
    EXPECT_TRUE(dumps_strictly(s)) << b;
    for (unsigned char c : s) EXPECT_TRUE(c >= 0x20 && c != 0x7F) << b;
  }
}

TEST(Sanitize, AJsonDocumentStaysAJsonDocument) {
  // IMDS replies are sanitized before they are parsed: what JSON allows must survive.
  auto doc = sanitize("{\"a\": \"x\x7f\xc2\x85 \xe2\x82\xac\",\n\t\"b\": 1}\r\n");
  auto j = nlohmann::json::parse(doc, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << doc;
  EXPECT_EQ(j["a"], "x\x7f\xc2\x85 \xe2\x82\xac");
  EXPECT_EQ(j["b"], 1);
}

TEST(Sanitize, CutsAtACodePointOrAnEscapeWithAnEllipsisWithinTheLimit) {
  EXPECT_EQ(sanitize("abcdefghij", 10), "abcdefghij");
  EXPECT_EQ(sanitize("abcdefghijk", 10), "abcdefg...");
  // "é" is two bytes: never split.
  EXPECT_EQ(sanitize("abcdeééé", 9), "abcde...");
  // An escape is four bytes: never split either.
  EXPECT_EQ(sanitize("abcd\xff\xff", 9), "abcd...");
  EXPECT_EQ(sanitize("abc\x1b" "defgh", 11), "abc...");  // "\u001b" is six
  EXPECT_EQ(sanitize("abcdefgh", 2), "ab");
  EXPECT_EQ(sanitize("abcdefgh", 0), "");
  const std::string huge(60000, '\xff');
  auto s = sanitize(huge, 160);
  EXPECT_LE(s.size(), 160u);
  EXPECT_TRUE(s.ends_with("..."));
  EXPECT_TRUE(dumps_strictly(s));
}

TEST(TruncateUtf8, CutsAtACodePointAndKeepsTheEllipsisWithinTheLimit) {
  EXPECT_EQ(truncate_utf8("short", 10), "short");
  EXPECT_EQ(truncate_utf8("exactly10!", 10), "exactly10!");
  EXPECT_EQ(truncate_utf8("0123456789ab", 10), "0123456...");
  // Byte 7 is inside "€" (3 bytes at 5..7): the cut moves before it.
  auto t = truncate_utf8("01234€€€€", 10);
  EXPECT_EQ(t, "01234...");
  EXPECT_TRUE(dumps_strictly(t));
  EXPECT_EQ(truncate_utf8("\xF0\x9F\x94\xA5\xF0\x9F\x94\xA5", 7), "\xF0\x9F\x94\xA5...");
  EXPECT_EQ(truncate_utf8("abcdef", 2), "ab");
}

TEST(Utf8Boundary, NeedsOnlyTheBytesBeforeTheCut) {
  EXPECT_EQ(utf8_boundary("abc", 10), 3u);
  EXPECT_EQ(utf8_boundary("ab\xE2\x82", 4), 2u);      // "€" cut short at the end
  EXPECT_EQ(utf8_boundary("ab\xE2\x82\xAC", 5), 5u);  // whole
  EXPECT_EQ(utf8_boundary("ab\xE2\x82\xAC", 4), 2u);
  EXPECT_EQ(utf8_boundary("\x80\x80\x80\x80\x80", 5), 5u);  // garbage: nothing to protect
}

namespace {
struct StringsScenario {
  ar::test::TempDir dir;
  std::filesystem::path file = dir / "nvml.json";
  explicit StringsScenario(const std::string& scenario_json) {
    std::ofstream(file) << scenario_json;
    ::setenv("FAKE_NVML_SCENARIO", file.c_str(), 1);
  }
};
}  // namespace

TEST(NvmlStrings, AreSanitizedWhereTheyAreCopied) {
  // A GPU name is shown in status and drain reasons; the library's bytes are outside text.
  StringsScenario s(R"({"devices":[{"name":"NVIDIA H100\u001b[31m\u0007"}]})");
  NvmlCollector c(FAKE_NVML_PATH);
  auto fleet = c.collect();
  ASSERT_TRUE(fleet.nvml_loaded) << fleet.load_error;
  ASSERT_EQ(fleet.gpus.size(), 1u);
  EXPECT_EQ(fleet.gpus[0].name, R"(NVIDIA H100\u001b[31m\u0007)");
}

TEST(SanitizeCBuffer, StopsAtTheNulOrTheBufferEnd) {
  const char terminated[8] = {'G', 'P', 'U', '\0', 'x', 'x', 'x', 'x'};
  EXPECT_EQ(sanitize_c_buffer(terminated, sizeof terminated), "GPU");
  const char unterminated[4] = {'a', 'b', '\x1b', '\xff'};
  EXPECT_EQ(sanitize_c_buffer(unterminated, sizeof unterminated), R"(ab\u001b\xff)");
}

TEST(ProtocolEncode, NeverThrowsOnAStringThatIsNotUtf8) {
  // A text that escaped sanitizing must not end a reply or the event loop that writes it.
  std::string line;
  ASSERT_NO_THROW(line = ar::proto::encode(nlohmann::json{{"message", "bad \xff\xfe"}}));
  EXPECT_EQ(line, "{\"message\":\"bad \xEF\xBF\xBD\xEF\xBF\xBD\"}\n");  // U+FFFD each
}

TEST(DcgmText, FindingsAndParseErrorsAreSanitized) {
  auto findings = parse_dcgm_diag(R"({"tests":[{"name":"Memory\u001b[2J","results":[{"status":"Fail","gpu_id":"0","warnings":"bad\u0007 row"}]}]})");
  ASSERT_TRUE(findings) << findings.error();
  ASSERT_EQ(findings->size(), 1u);
  EXPECT_EQ(findings->at(0).test, R"(Memory\u001b[2J)");
  EXPECT_EQ(findings->at(0).message, R"(bad\u0007 row)");
  // nlohmann quotes the bytes it stopped at: here an invalid one, and an escape.
  auto broken = parse_dcgm_diag("{\"tests\": \x1b[31m\xff}");
  ASSERT_FALSE(broken);
  EXPECT_TRUE(dumps_strictly(broken.error())) << broken.error();
  for (unsigned char c : broken.error()) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << broken.error();
}

TEST(Ec2Text, NoticeFieldsAreSanitized) {
  auto n = parse_maintenance_events(
      R"([{"Code":"system-reboot","State":"active","Description":"scheduled\u001b]0;owned\u0007 reboot"}])");
  ASSERT_TRUE(n) << n.error();
  ASSERT_EQ(n->size(), 1u);
  EXPECT_EQ(n->at(0).message, R"(ec2: system-reboot scheduled: scheduled\u001b]0;owned\u0007 reboot)");
}

// A fault's code and message as they leave the daemon (issue 31): a rule's capture or a
// user-named path cannot carry a newline, a shell word or a terminal escape into a Slurm reason, an
// admin comment or a hook's environment.
TEST(FaultText, ACodeKeepsOnlyWhatACodeIsMadeOf) {
  EXPECT_EQ(fault_code_text("GPU-XID-79"), "GPU-XID-79");
  EXPECT_EQ(fault_code_text("IB-LINK:mlx5_0.1"), "IB-LINK:mlx5_0.1");
  EXPECT_EQ(fault_code_text("X$(reboot)\n;`id`"), "X__reboot____id_");
  EXPECT_EQ(fault_code_text("A\xc2\x9b""B"), "A__B");
  EXPECT_EQ(fault_code_text(std::string(500, 'C')).size(), kMaxFaultCodeBytes);
  EXPECT_EQ(fault_code_text(""), "UNKNOWN");
}

TEST(FaultText, AMessageIsSanitizedAndBounded) {
  const auto m = fault_message_text("heartbeat /fsx/\xc2\x9b""31m\xc2\x9d""0;title\x07 has not moved\n" + std::string(1000, 'x'));
  EXPECT_LE(m.size(), kMaxFaultMessageBytes);
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_EQ(m.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(m.find("\xc2\x9d"), std::string::npos);
  EXPECT_NE(m.find("\\u009b31m"), std::string::npos) << m;
  EXPECT_TRUE(dumps_strictly(m));
}
