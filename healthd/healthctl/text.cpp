#include "text.hpp"

#include <algorithm>
#include <utility>

namespace ar::healthctl {

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the valid UTF-8 sequence at `s[i]`, or 0 when it is not one (a stray continuation
// byte, a truncated sequence, an overlong form, a surrogate, past U+10FFFF). `cp` gets its value.
std::size_t utf8_sequence(std::string_view s, std::size_t i, char32_t& cp) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t len = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (!is_continuation(b)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

// Code points a terminal acts on rather than shows: C0 controls, DEL, C1 controls (U+009B is CSI on
// some terminals), the line and paragraph separators, and the bidirectional overrides and isolates
// (which make a line read otherwise than it is).
bool is_control(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

// The byte offset after the first `columns` code points of `text` (which holds no escape).
std::size_t offset_of_column(std::string_view text, std::size_t columns) {
  std::size_t i = 0, seen = 0;
  while (i < text.size()) {
    if (!is_continuation(static_cast<unsigned char>(text[i]))) {
      if (seen == columns) break;
      ++seen;
    }
    ++i;
  }
  return i;
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      auto end = text.find('m', i + 2);
      if (end != std::string_view::npos) {
        i = end;
        continue;
      }
    }
    if (!is_continuation(static_cast<unsigned char>(text[i]))) ++width;
  }
  return width;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const auto len = utf8_sequence(text, i, cp);
    if (len == 0) {
      out += '?';
      ++i;
      continue;
    }
    if (cp == '\t') out += ' ';
    else if (is_control(cp)) out += '?';
    else out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

std::string fit(std::string_view text, std::size_t width, std::string_view ellipsis) {
  if (width == 0 || display_width(text) <= width) return std::string(text);
  const auto mark = display_width(ellipsis);
  if (width <= mark) return std::string(text.substr(0, offset_of_column(text, width)));
  std::string out(text.substr(0, offset_of_column(text, width - mark)));
  // A cut just after a space reads as a gap: the ellipsis goes right after the last word.
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + std::string(ellipsis);
}

std::string pad(std::string_view text, std::size_t width) {
  std::string out(text);
  if (auto w = display_width(text); w < width) out.append(width - w, ' ');
  return out;
}

std::string pad_left(std::string_view text, std::size_t width) {
  std::string out;
  if (auto w = display_width(text); w < width) out.append(width - w, ' ');
  return out + std::string(text);
}

std::vector<std::string> wrap(std::string_view text, std::size_t width) {
  std::vector<std::string> lines;
  if (width == 0) return {std::string(text)};
  std::string line;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size()) break;
    auto end = text.find(' ', i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(i, end - i);
    i = end;
    const auto need = display_width(line) + (line.empty() ? 0 : 1) + display_width(word);
    if (need <= width) {
      line += (line.empty() ? "" : " ") + std::string(word);
      continue;
    }
    if (!line.empty()) lines.push_back(std::exchange(line, {}));
    while (display_width(word) > width) {  // a word longer than a line: in pieces
      const auto cut = offset_of_column(word, width);
      lines.emplace_back(word.substr(0, cut));
      word.remove_prefix(cut);
    }
    line = std::string(word);
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::string shorten_path(std::string_view path, std::size_t width, std::string_view ellipsis) {
  if (width == 0 || display_width(path) <= width) return std::string(path);
  const auto first_end = path.find('/', path.starts_with('/') ? 1 : 0);
  if (first_end == std::string_view::npos) return fit(path, width, ellipsis);
  // The longest run of last components ("/deeper/healthd-n1.sock") that fits in `room`.
  auto tail_within = [&](std::size_t room) {
    std::string tail;
    for (auto pos = path.size(); pos > first_end;) {
      const auto slash = path.rfind('/', pos - 1);
      if (slash == std::string_view::npos || slash <= first_end) break;
      if (display_width(path.substr(slash)) > room) break;
      tail = std::string(path.substr(slash));
      pos = slash;
    }
    return tail;
  };
  // Where it starts ("/tmp") tells a test tree from /run; kept when the file name still fits beside it.
  const std::string head(path.substr(0, first_end));
  const auto with_head = display_width(head) + 1 + display_width(ellipsis);
  if (with_head < width) {
    if (auto tail = tail_within(width - with_head); !tail.empty()) return head + "/" + std::string(ellipsis) + tail;
  }
  if (auto tail = tail_within(width - std::min(width, display_width(ellipsis))); !tail.empty())
    return std::string(ellipsis) + tail;
  return fit(path, width, ellipsis);  // not even the file name fits
}

std::string colour(std::string_view text, Color c, bool enabled) {
  if (!enabled || c == Color::none) return std::string(text);
  const char* code = "";
  switch (c) {
    case Color::red: code = "\x1b[31m"; break;
    case Color::yellow: code = "\x1b[33m"; break;
    case Color::green: code = "\x1b[32m"; break;
    case Color::bold: code = "\x1b[1m"; break;
    case Color::none: break;
  }
  return std::string(code) + std::string(text) + "\x1b[0m";
}

}  // namespace ar::healthctl
