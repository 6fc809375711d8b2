// What the terminal (or the pipe) on standard output wants: colour or not, how wide, and which
// ellipsis it can show. The decisions are pure functions of what was read, tested as such;
// detect_terminal() reads it.
#pragma once

#include <cstddef>
#include <string>

namespace ar::healthctl {

// Colour only for a person at a terminal: stdout is a tty, --no-color was not given, NO_COLOR is
// not set (at all: even empty, stricter than no-color.org's "not empty"), and TERM is not "dumb".
bool want_color(bool stdout_is_tty, bool no_color_flag, const char* no_color_env, const char* term_env);

// The width to fit: $COLUMNS when it is a number (set by hand, or exported by the shell), else
// on a terminal its width (80 when it says none); to a pipe or a file 0: nothing is cut, so a
// script that greps the output sees every word. Never below 40: narrower, nothing fits anyway.
std::size_t output_width(const char* columns_env, bool is_tty, std::size_t tty_columns);

// "…" when the locale's character set is UTF-8, else "..." (a C locale, an old terminal).
std::string ellipsis_for(const char* codeset);

struct Terminal {
  bool tty = false;
  std::size_t width = 0;  // 0: no limit
  std::string ellipsis = "...";
};

// Standard output as it is now (isatty, TIOCGWINSZ, $COLUMNS, the locale's codeset).
Terminal detect_terminal();

}  // namespace ar::healthctl
