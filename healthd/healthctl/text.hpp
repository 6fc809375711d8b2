// Text for a terminal: what a line measures, how it is cut to fit, and how text from outside (a
// kernel-log line quoted in a check's message, a user name) is made safe to print.
//
// Widths are counted in code points: every string here is UTF-8 (the daemon's JSON is, and
// printable() keeps it so), and a code point is one column for the text healthctl shows. Escape
// sequences of colour() take no column and are never cut.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ar::healthctl {

// The columns `text` takes: its code points, less any SGR escape sequence (ESC [ ... m).
std::size_t display_width(std::string_view text);

// Text from outside as one printable line: each control character (C0, DEL, C1: a terminal would
// act on it, as on ESC [ 2 J) and each byte that is not valid UTF-8 becomes '?'.
std::string printable(std::string_view text);

// At most `width` columns of `text`: cut at a code point and ended with `ellipsis` when it was
// longer. A `width` of 0 means no limit.
std::string fit(std::string_view text, std::size_t width, std::string_view ellipsis);

// `text` padded with spaces to `width` columns (never cut).
std::string pad(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);

// Words of `text` on lines of at most `width` columns (a word longer than a line is cut into
// pieces). A `width` of 0: one line.
std::vector<std::string> wrap(std::string_view text, std::size_t width);

// A path in at most `width` columns, keeping what names it: its last components (the file and
// its directory) and, when room is left, its first, with `ellipsis` for what is left out:
// "/tmp/…/run/healthd-n1.sock". A `width` of 0: the whole path.
std::string shorten_path(std::string_view path, std::size_t width, std::string_view ellipsis);

// Colours for a result word. None leaves the text as it is.
enum class Color { none, red, yellow, green, bold };
std::string colour(std::string_view text, Color c, bool enabled);

}  // namespace ar::healthctl
