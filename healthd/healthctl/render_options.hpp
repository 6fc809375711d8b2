// How the human-readable output is laid out, decided once by main from the terminal and the
// command line and handed to every formatter (which stays a pure function of reply and options).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ar::healthctl {

struct RenderOptions {
  std::size_t width = 80;        // every line fits in this many columns; 0: no limit (nothing is cut)
  bool long_form = false;        // -l: every text in full, every column; lines may run past `width`
  bool color = false;            // SGR colours on result words (a terminal that wants them: terminal.hpp)
  std::string ellipsis = "...";  // marks a cut text ("…" where the locale is UTF-8)
  std::int64_t now_ms = 0;       // now, for ages and for "today"
  // A uid's user name ("alice"); unset or empty answer: the number is shown.
  std::function<std::string(std::uint32_t)> user_name;

  // The width texts are cut to: 0 (no limit) in the long form or with no width.
  std::size_t limit() const { return long_form ? 0 : width; }
  std::string user(std::uint32_t uid) const;
};

}  // namespace ar::healthctl
