// Times as healthctl prints them: in the local time zone (healthctl runs on the node, beside the
// admin reading it), always with the date unless the time is today, and ages for what is recent.
// Every function takes "now" from its caller, so the output of a test is fixed.
#pragma once

#include <cstdint>
#include <string>

namespace ar::healthctl {

// "2026-11-29 14:03:22", with ".123" when `millis`; local time.
std::string local_datetime(std::int64_t at_ms, bool millis = false);

// The local zone's offset from UTC at that time, "+01:00".
std::string utc_offset(std::int64_t at_ms);

// When a result was taken, as short as is still clear: "12s ago", "5m ago" within the hour,
// "14:03:22" earlier today, "11-28 14:03:22" before today ("2026-11-28 14:03:22" with
// `full_date`); "-" for no time (0 or less).
std::string when(std::int64_t at_ms, std::int64_t now_ms, bool full_date = false);

// An age alone: "12s ago", "5m ago", "3h ago", "2d ago" ("in the future" when the clock moved back).
std::string age(std::int64_t at_ms, std::int64_t now_ms);

// A span of seconds: "45s", "12m 05s", "3h 02m", "4d 07h".
std::string span(std::int64_t seconds);

// Milliseconds since the epoch, now.
std::int64_t now_epoch_ms();

}  // namespace ar::healthctl
