#include "clock_text.hpp"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace ar::healthctl {

namespace {

std::tm local_tm(std::int64_t at_ms) {
  // Floor division: a time before the epoch (a hostile reply) still names a real second.
  std::int64_t secs = at_ms / 1000;
  if (at_ms % 1000 < 0) --secs;
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  return tm;
}

int millis_of(std::int64_t at_ms) { return static_cast<int>(((at_ms % 1000) + 1000) % 1000); }

bool same_day(const std::tm& a, const std::tm& b) {
  return a.tm_year == b.tm_year && a.tm_yday == b.tm_yday;
}

}  // namespace

std::string local_datetime(std::int64_t at_ms, bool millis) {
  const auto tm = local_tm(at_ms);
  auto out = fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (millis) out += fmt::format(".{:03d}", millis_of(at_ms));
  return out;
}

std::string utc_offset(std::int64_t at_ms) {
  const auto tm = local_tm(at_ms);
  const long off = tm.tm_gmtoff;
  const long a = off < 0 ? -off : off;
  return fmt::format("{}{:02d}:{:02d}", off < 0 ? '-' : '+', a / 3600, (a % 3600) / 60);
}

std::string age(std::int64_t at_ms, std::int64_t now_ms) {
  const auto delta = (now_ms - at_ms) / 1000;
  if (now_ms - at_ms < -2000) return "in the future";  // the clock moved back since
  if (delta < 60) return fmt::format("{}s ago", delta < 0 ? 0 : delta);
  if (delta < 3600) return fmt::format("{}m ago", delta / 60);
  if (delta < 86400) return fmt::format("{}h ago", delta / 3600);
  return fmt::format("{}d ago", delta / 86400);
}

std::string when(std::int64_t at_ms, std::int64_t now_ms, bool full_date) {
  if (at_ms <= 0) return "-";
  const auto delta = now_ms - at_ms;
  if (delta >= -2000 && delta < 3600 * 1000) return age(at_ms, now_ms);
  const auto at = local_tm(at_ms);
  if (same_day(at, local_tm(now_ms))) return fmt::format("{:02d}:{:02d}:{:02d}", at.tm_hour, at.tm_min, at.tm_sec);
  if (full_date) return local_datetime(at_ms);
  return fmt::format("{:02d}-{:02d} {:02d}:{:02d}:{:02d}", at.tm_mon + 1, at.tm_mday, at.tm_hour, at.tm_min, at.tm_sec);
}

std::string span(std::int64_t s) {
  if (s < 0) s = 0;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {:02d}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d {:02d}h", s / 86400, (s % 86400) / 3600);
}

std::int64_t now_epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace ar::healthctl
