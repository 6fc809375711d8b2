// Range-checked readers of the numbers in healthd's state files (registry, journal, timeline, the
// checks' own state). nlohmann's get<std::uint32_t>() wraps -1 to 4294967295, truncates 1.5 and is
// undefined behaviour for 1e30; from_epoch_ms overflows for a timestamp past the year 2262. A state
// file is healthd's own writing, so a value out of range means it is damaged (or was edited): it is
// refused as a whole, with the key, rather than half believed.
//
// The readers throw StateFieldError ("key 'job_id': must be an integer from 0 to 4294967295, not -1");
// a loader catches it with nlohmann's exceptions (both are std::exception) and names the file:
//
//   try {
//     job.job_id = json_fields::integer<std::uint32_t>(jj, "job_id");
//     s.started_at = json_fields::time_ms(sj, "started_at_ms");
//     if (auto t = json_fields::optional_time_ms(sj, "ended_at_ms")) s.ended_at = *t;
//   } catch (const std::exception& e) {
//     return std::unexpected(file + ": bad content: " + e.what());
//   }
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace ar::healthd {

class StateFieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace json_fields {

// Times healthd writes are "now" (or 0 for "never"): anything before 1970 or after 2200 is damage,
// and 2200 stays well inside what system_clock (nanoseconds in 64 bits, to 2262) can hold.
inline constexpr std::int64_t kMinEpochMs = 0;
inline constexpr std::int64_t kMaxEpochMs = 7258118400000;  // 2200-01-01T00:00:00Z

namespace detail {

// A value for an error message: short, and valid text whatever the file held.
inline std::string show(const nlohmann::json& v) {
  auto text = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

inline const nlohmann::json& field(const nlohmann::json& obj, const std::string& key) {
  if (!obj.is_object()) throw StateFieldError("key '" + key + "': its parent is not an object but " + show(obj));
  auto it = obj.find(key);
  if (it == obj.end()) throw StateFieldError("key '" + key + "' is missing");
  return *it;
}

}  // namespace detail

// `v` (named `what` in errors) as an integer of type T within [min, max]: not a float, not a bool,
// not a string.
template <typename T>
T integer_value(const nlohmann::json& v, const std::string& what, T min = std::numeric_limits<T>::min(),
                T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  std::optional<T> out;
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (std::in_range<T>(u)) out = static_cast<T>(u);
  } else if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    if (std::in_range<T>(i)) out = static_cast<T>(i);
  }
  if (!out || *out < min || *out > max)
    throw StateFieldError("key '" + what + "': must be an integer from " + std::to_string(min) + " to " +
                          std::to_string(max) + ", not " + detail::show(v));
  return *out;
}

// An integer written as text (an object key such as a job id: {"jobs": {"42": [...]}}), all of
// `text` decimal digits: std::stoul took "-1" (as 4294967295 once cast) and "12abc".
template <typename T>
T integer_text(const std::string& text, const std::string& what, T min = std::numeric_limits<T>::min(),
               T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  T out{};
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  bool digits_only = !text.empty() && (text[0] != '-' || std::is_signed_v<T>) && text[0] != '+';
  if (!digits_only || ec != std::errc() || p != end || out < min || out > max) {
    auto shown = nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    throw StateFieldError("key '" + what + "': must be an integer from " + std::to_string(min) + " to " +
                          std::to_string(max) + ", not " + (shown.size() > 40 ? shown.substr(0, 40) + "..." : shown));
  }
  return out;
}

// obj[key], which must be there.
template <typename T>
T integer(const nlohmann::json& obj, const std::string& key, T min = std::numeric_limits<T>::min(),
          T max = std::numeric_limits<T>::max()) {
  return integer_value<T>(detail::field(obj, key), key, min, max);
}

// obj[key] if it is there (present, it must be in range: null is not "absent").
template <typename T>
std::optional<T> optional_integer(const nlohmann::json& obj, const std::string& key, T min = std::numeric_limits<T>::min(),
                                  T max = std::numeric_limits<T>::max()) {
  if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
  return integer_value<T>(obj.at(key), key, min, max);
}

// obj[key] if it is there, else `fallback` (a key older files lack).
template <typename T>
T integer_or(const nlohmann::json& obj, const std::string& key, T fallback, T min = std::numeric_limits<T>::min(),
             T max = std::numeric_limits<T>::max()) {
  return optional_integer<T>(obj, key, min, max).value_or(fallback);
}

// A wall-clock time written by to_epoch_ms (atomic_file.hpp), within [kMinEpochMs, kMaxEpochMs].
inline std::chrono::system_clock::time_point time_value(const nlohmann::json& v, const std::string& what) {
  auto ms = integer_value<std::int64_t>(v, what, kMinEpochMs, kMaxEpochMs);
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

inline std::chrono::system_clock::time_point time_ms(const nlohmann::json& obj, const std::string& key) {
  return time_value(detail::field(obj, key), key);
}

inline std::optional<std::chrono::system_clock::time_point> optional_time_ms(const nlohmann::json& obj,
                                                                             const std::string& key) {
  if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
  return time_value(obj.at(key), key);
}

// obj[key] as a boolean: JSON true or false, nothing else.
inline bool boolean(const nlohmann::json& obj, const std::string& key) {
  const auto& v = detail::field(obj, key);
  if (!v.is_boolean()) throw StateFieldError("key '" + key + "': must be true or false, not " + detail::show(v));
  return v.get<bool>();
}

// obj[key] as an array (to walk with the readers above, naming elements "key[i]"). The reference is
// into obj, never into key: GCC 14+ cannot tell, and warns (-Wdangling-reference) where the key is a
// temporary string; no_dangling (GCC 14) says so to it. Older GCC and clang do not know the attribute.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 14
#define AR_NO_DANGLING [[gnu::no_dangling]]
#else
#define AR_NO_DANGLING
#endif
AR_NO_DANGLING inline const nlohmann::json& array(const nlohmann::json& obj, const std::string& key) {
  const auto& v = detail::field(obj, key);
  if (!v.is_array()) throw StateFieldError("key '" + key + "': must be an array, not " + detail::show(v));
  return v;
}

}  // namespace json_fields
}  // namespace ar::healthd
