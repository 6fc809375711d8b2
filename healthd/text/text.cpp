#include "text.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace ar::healthd {
namespace {

constexpr std::string_view kEllipsis = "...";

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// The length a lead byte announces (2..4), or 0 for a byte no valid sequence starts with.
std::size_t announced_length(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// The length of the valid multi-byte sequence at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 if there is none.
std::size_t valid_sequence_at(std::string_view s, std::size_t i) {
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

constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                       '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

// One unit of output: a kept character, a space, or an escape.
struct Unit {
  std::array<char, 6> bytes{};
  std::size_t size = 0;
  std::size_t consumed = 1;  // input bytes it stands for
};

Unit escaped(std::string_view prefix, unsigned char b) {
  Unit u;
  for (char c : prefix) u.bytes[u.size++] = c;
  u.bytes[u.size++] = kHex[b >> 4];
  u.bytes[u.size++] = kHex[b & 0xF];
  return u;
}

Unit next_unit(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b == '\t' || b == '\n' || b == '\r') return Unit{{' '}, 1, 1};
  if (b < 0x20 || b == 0x7F) return escaped("\\u00", b);
  if (b < 0x80) return Unit{{static_cast<char>(b)}, 1, 1};
  const std::size_t len = valid_sequence_at(s, i);
  if (len == 0) return escaped("\\x", b);
  if (b == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {  // U+0080..U+009F: C1 controls
    Unit u = escaped("\\u00", static_cast<unsigned char>(s[i + 1]));
    u.consumed = 2;
    return u;
  }
  Unit u;
  for (std::size_t k = 0; k < len; ++k) u.bytes[u.size++] = s[i + k];
  u.consumed = len;
  return u;
}

}  // namespace

std::string sanitize(std::string_view bytes, std::size_t max_len) {
  const std::size_t room_for_ellipsis = max_len >= kEllipsis.size() ? kEllipsis.size() : 0;
  std::string out;
  out.reserve(std::min(bytes.size(), max_len));
  // The longest output so far that still leaves room for the ellipsis: where a cut goes.
  std::size_t cut = 0;
  for (std::size_t i = 0; i < bytes.size();) {
    const Unit u = next_unit(bytes, i);
    if (out.size() + u.size > max_len) {
      out.resize(cut);
      out += kEllipsis.substr(0, room_for_ellipsis);
      return out;
    }
    out.append(u.bytes.data(), u.size);
    if (out.size() + room_for_ellipsis <= max_len) cut = out.size();
    i += u.consumed;
  }
  return out;
}

std::string sanitize_c_buffer(const char* buf, std::size_t size, std::size_t max_len) {
  return sanitize(std::string_view(buf, ::strnlen(buf, size)), max_len);
}

std::size_t utf8_boundary(std::string_view s, std::size_t max_bytes) {
  const std::size_t n = std::min(max_bytes, s.size());
  // Look back over at most 3 bytes for the lead of a sequence that runs past n.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(s[n - back]);
    if (is_continuation(b)) continue;
    return announced_length(b) > back ? n - back : n;
  }
  return n;
}

std::string truncate_utf8(std::string s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  const std::size_t room_for_ellipsis = max_bytes >= kEllipsis.size() ? kEllipsis.size() : 0;
  s.resize(utf8_boundary(s, max_bytes - room_for_ellipsis));
  s += kEllipsis.substr(0, room_for_ellipsis);
  return s;
}

std::string fault_code_text(std::string_view code) {
  std::string out;
  for (char c : code.substr(0, kMaxFaultCodeBytes)) {
    const bool kept = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '_' || c == '.' || c == ':';
    out += kept ? c : '_';
  }
  return out.empty() ? std::string("UNKNOWN") : out;
}

std::string fault_message_text(std::string_view message) { return sanitize(message, kMaxFaultMessageBytes); }

}  // namespace ar::healthd
