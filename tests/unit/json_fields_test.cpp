// The range-checked readers of state-file numbers (state/json_fields.hpp).
#include <gtest/gtest.h>

#include "state/json_fields.hpp"

using namespace ar::healthd;
namespace f = ar::healthd::json_fields;
using nlohmann::json;

namespace {
// The error of reading `read`, "" if it was accepted.
template <typename F>
std::string error_of(F read) {
  try {
    read();
  } catch (const StateFieldError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(JsonFields, IntegersMustBeIntegersInTheirType) {
  auto j = json::parse(R"({"a": 7, "neg": -1, "half": 1.5, "whole": 2.0, "big": 4294967296, "huge": 1e30,
                          "text": "7", "yes": true, "max": 18446744073709551615})");
  EXPECT_EQ(f::integer<std::uint32_t>(j, "a"), 7u);
  EXPECT_EQ(f::integer<int>(j, "neg"), -1);
  EXPECT_EQ(f::integer<std::uint64_t>(j, "max"), 18446744073709551615u);
  EXPECT_EQ(error_of([&] { f::integer<std::uint32_t>(j, "neg"); }),
            "key 'neg': must be an integer from 0 to 4294967295, not -1");
  for (const char* key : {"half", "whole", "big", "huge", "text", "yes"})
    EXPECT_NE(error_of([&] { f::integer<std::uint32_t>(j, key); }).find(std::string("key '") + key + "'"),
              std::string::npos)
        << key;
  EXPECT_NE(error_of([&] { f::integer<std::int64_t>(j, "max"); }), "");
  EXPECT_NE(error_of([&] { f::integer<std::uint32_t>(j, "a", 10, 20); }).find("from 10 to 20"), std::string::npos);
  EXPECT_EQ(error_of([&] { f::integer<std::uint32_t>(j, "missing"); }), "key 'missing' is missing");
  EXPECT_NE(error_of([&] { f::integer<std::uint32_t>(json::array(), "a"); }).find("not an object"), std::string::npos);
}

TEST(JsonFields, OptionalKeysMayBeAbsentButNotWrong) {
  auto j = json::parse(R"({"a": 3, "n": null, "neg": -4})");
  EXPECT_EQ(f::optional_integer<std::uint32_t>(j, "a"), 3u);
  EXPECT_EQ(f::optional_integer<std::uint32_t>(j, "absent"), std::nullopt);
  EXPECT_NE(error_of([&] { f::optional_integer<std::uint32_t>(j, "n"); }), "");
  EXPECT_EQ(f::integer_or<std::uint32_t>(j, "absent", 9), 9u);
  EXPECT_NE(error_of([&] { f::integer_or<std::uint32_t>(j, "neg", 9); }), "");
}

TEST(JsonFields, TimesStayWhereSystemClockCanHoldThem) {
  auto j = json::parse(R"({"now": 1700000000000, "zero": 0, "neg": -1, "far": 9223372036854775807, "y2300": 10413792000000,
                          "float": 1.7e12})");
  EXPECT_EQ(f::time_ms(j, "now"), std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000000)));
  EXPECT_EQ(f::time_ms(j, "zero"), std::chrono::system_clock::time_point{});
  for (const char* key : {"neg", "far", "y2300", "float"})
    EXPECT_NE(error_of([&] { f::time_ms(j, key); }).find(std::string("key '") + key + "'"), std::string::npos) << key;
  EXPECT_EQ(f::optional_time_ms(j, "absent"), std::nullopt);
  EXPECT_NE(error_of([&] { f::time_value(json(-5), "events_ms[2]"); }).find("key 'events_ms[2]'"), std::string::npos);
}

TEST(JsonFields, BooleansAndArrays) {
  auto j = json::parse(R"({"t": true, "one": 1, "list": [1], "obj": {}})");
  EXPECT_TRUE(f::boolean(j, "t"));
  EXPECT_NE(error_of([&] { f::boolean(j, "one"); }), "");
  EXPECT_EQ(f::array(j, "list").size(), 1u);
  EXPECT_NE(error_of([&] { f::array(j, "obj"); }).find("must be an array"), std::string::npos);
}

TEST(JsonFields, ErrorsShowBadValuesShortAndValid) {
  json j = {{"s", std::string(100, 'x')}};
  auto e = error_of([&] { f::integer<int>(j, "s"); });
  EXPECT_LT(e.size(), 120u) << e;
  json bad = {{"s", std::string("\xff\xfe")}};
  e = error_of([&] { f::integer<int>(bad, "s"); });
  EXPECT_NO_THROW(json(e).dump()) << e;
}

TEST(JsonFields, IntegersWrittenAsKeys) {
  EXPECT_EQ(f::integer_text<std::uint32_t>("42", "jobs"), 42u);
  EXPECT_EQ(f::integer_text<std::uint32_t>("4294967295", "jobs"), 4294967295u);
  for (const char* bad : {"-1", "4294967296", "12abc", "", "+5", " 5", "1.5", "0x10"})
    EXPECT_NE(error_of([&] { f::integer_text<std::uint32_t>(bad, "jobs"); }).find("key 'jobs'"), std::string::npos)
        << bad;
  EXPECT_EQ(f::integer_text<int>("-7", "x"), -7);
}
