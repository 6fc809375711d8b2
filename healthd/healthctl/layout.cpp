#include "layout.hpp"

namespace ar::healthctl {

std::string labelled(std::string_view label, std::string_view value, ValueKind kind, const RenderOptions& o,
                     Color c) {
  const std::string head = pad(std::string(label) + ":", kLabelWidth);
  const auto limit = o.limit();
  const std::size_t room = limit > kLabelWidth ? limit - kLabelWidth : 0;
  if (limit == 0 || display_width(value) <= room) return head + colour(value, c, o.color) + "\n";
  if (kind == ValueKind::path) return head + colour(shorten_path(value, room, o.ellipsis), c, o.color) + "\n";
  std::string out;
  bool first = true;
  for (const auto& line : wrap(value, room)) {
    out += (first ? head : std::string(kLabelWidth, ' ')) + colour(line, c, o.color) + "\n";
    first = false;
  }
  return out;
}

Color colour_of_status(std::string_view status) {
  if (status == "fault") return Color::red;
  if (status == "warn" || status == "error") return Color::yellow;
  if (status == "ok") return Color::green;
  return Color::none;
}

}  // namespace ar::healthctl
