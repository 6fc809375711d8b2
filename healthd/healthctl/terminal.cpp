#include "terminal.hpp"

#include <algorithm>
#include <charconv>
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <langinfo.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace ar::healthctl {

bool want_color(bool stdout_is_tty, bool no_color_flag, const char* no_color_env, const char* term_env) {
  if (!stdout_is_tty || no_color_flag) return false;
  if (no_color_env != nullptr) return false;
  return term_env == nullptr || std::string_view(term_env) != "dumb";
}

std::size_t output_width(const char* columns_env, bool is_tty, std::size_t tty_columns) {
  constexpr std::size_t kNarrowest = 40;
  std::size_t width = is_tty ? (tty_columns > 0 ? tty_columns : 80) : 0;
  if (columns_env != nullptr && *columns_env != '\0') {
    const std::string_view s(columns_env);
    std::size_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size() && v > 0 && v <= 10000) width = v;
  }
  return width == 0 ? 0 : std::max(width, kNarrowest);
}

std::string ellipsis_for(const char* codeset) {
  if (codeset == nullptr) return "...";
  const std::string_view c(codeset);
  return c == "UTF-8" || c == "utf8" || c == "UTF8" ? "\u2026" : "...";
}

Terminal detect_terminal() {
  Terminal t;
  t.tty = ::isatty(STDOUT_FILENO) == 1;
  std::size_t tty_columns = 0;
  if (winsize ws{}; t.tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) tty_columns = ws.ws_col;
  t.width = output_width(std::getenv("COLUMNS"), t.tty, tty_columns);
  // The character set of the user's locale (LC_CTYPE from the environment), then back to "C" so
  // that nothing else of healthctl changes with the locale.
  if (std::setlocale(LC_CTYPE, "") != nullptr) {
    t.ellipsis = ellipsis_for(::nl_langinfo(CODESET));
    std::setlocale(LC_CTYPE, "C");
  }
  return t;
}

}  // namespace ar::healthctl
