// Text from outside made safe to show, for both sides: the plugin (which writes nothing of healthd's
// libraries into slurmstepd) and healthd (healthd/text/text.hpp, which documents the rules at length).
// Pure functions, no I/O.
//
// sanitize() returns valid UTF-8 without control characters: an invalid byte becomes `\xNN`; tab,
// newline and carriage return one space; every other control character (C0, DEL, C1: U+0000..U+001F,
// U+007F..U+009F) `\u00NN`. A cut never splits a code point or an escape, and a cut text ends in "..."
// within the limit.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace ar::text {

namespace detail {

inline constexpr std::string_view kEllipsis = "...";

constexpr bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// The length a lead byte announces (2..4), or 0 for a byte no valid sequence starts with.
constexpr std::size_t announced_length(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// The length of the valid multi-byte sequence at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 if there is none.
constexpr std::size_t valid_sequence_at(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const std::size_t len = announced_length(b0);
  if (len == 0 || i + len > s.size()) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  // The second byte's range narrows for the leads that could otherwise be overlong, a surrogate
  // or too large.
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 == 0xE0) lo = 0xA0;
  else if (b0 == 0xED) hi = 0x9F;
  else if (b0 == 0xF0) lo = 0x90;
  else if (b0 == 0xF4) hi = 0x8F;
  if (b1 < lo || b1 > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (!is_continuation(static_cast<unsigned char>(s[i + k]))) return 0;
  return len;
}

// A valid two-byte sequence at s[i] that is a C1 control (U+0080..U+009F: C2 80..C2 9F).
constexpr bool c1_at(std::string_view s, std::size_t i) {
  return static_cast<unsigned char>(s[i]) == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
}

inline constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                              '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

// One unit of output: a kept character, a space, or an escape.
struct Unit {
  std::array<char, 6> bytes{};
  std::size_t size = 0;
  std::size_t consumed = 1;  // input bytes it stands for
};

inline Unit escaped(std::string_view prefix, unsigned char b) {
  Unit u;
  for (char c : prefix) u.bytes[u.size++] = c;
  u.bytes[u.size++] = kHex[b >> 4];
  u.bytes[u.size++] = kHex[b & 0xF];
  return u;
}

inline Unit next_unit(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b == '\t' || b == '\n' || b == '\r') return Unit{{' '}, 1, 1};
  if (b < 0x20 || b == 0x7F) return escaped("\\u00", b);
  if (b < 0x80) return Unit{{static_cast<char>(b)}, 1, 1};
  const std::size_t len = valid_sequence_at(s, i);
  if (len == 0) return escaped("\\x", b);
  if (c1_at(s, i)) {
    Unit u = escaped("\\u00", static_cast<unsigned char>(s[i + 1]));
    u.consumed = 2;
    return u;
  }
  Unit u;
  for (std::size_t k = 0; k < len; ++k) u.bytes[u.size++] = s[i + k];
  u.consumed = len;
  return u;
}

}  // namespace detail

inline constexpr std::size_t kNoLimit = std::string::npos;

// `bytes` made valid and free of control characters, at most `max_len` bytes long.
inline std::string sanitize(std::string_view bytes, std::size_t max_len = kNoLimit) {
  const std::size_t room_for_ellipsis = max_len >= detail::kEllipsis.size() ? detail::kEllipsis.size() : 0;
  std::string out;
  out.reserve(std::min(bytes.size(), max_len));
  // The longest output so far that still leaves room for the ellipsis: where a cut goes.
  std::size_t cut = 0;
  for (std::size_t i = 0; i < bytes.size();) {
    const detail::Unit u = detail::next_unit(bytes, i);
    if (out.size() + u.size > max_len) {
      out.resize(cut);
      out += detail::kEllipsis.substr(0, room_for_ellipsis);
      return out;
    }
    out.append(u.bytes.data(), u.size);
    if (out.size() + room_for_ellipsis <= max_len) cut = out.size();
    i += u.consumed;
  }
  return out;
}

// Whether `bytes` is valid UTF-8 without any control character (C0, DEL, C1): what sanitize() would
// return unchanged, tab, newline and carriage return excepted (they are controls too).
constexpr bool is_clean_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x20 || b == 0x7F) return false;
    if (b < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = detail::valid_sequence_at(bytes, i);
    if (len == 0 || detail::c1_at(bytes, i)) return false;
    i += len;
  }
  return true;
}

// Where to cut `s` to keep at most `max_bytes`: the largest n <= min(max_bytes, s.size()) such that
// s[0, n) does not end in a sequence cut short (at most 3 bytes less).
constexpr std::size_t utf8_boundary(std::string_view s, std::size_t max_bytes) {
  const std::size_t n = std::min(max_bytes, s.size());
  // Look back over at most 3 bytes for the lead of a sequence that runs past n.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(s[n - back]);
    if (detail::is_continuation(b)) continue;
    return detail::announced_length(b) > back ? n - back : n;
  }
  return n;
}

// `s` cut to at most `max_bytes`, at a code point, with "..." appended within the limit when cut.
inline std::string truncate_utf8(std::string s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  const std::size_t room_for_ellipsis = max_bytes >= detail::kEllipsis.size() ? detail::kEllipsis.size() : 0;
  s.resize(utf8_boundary(s, max_bytes - room_for_ellipsis));
  s += detail::kEllipsis.substr(0, room_for_ellipsis);
  return s;
}

}  // namespace ar::text
