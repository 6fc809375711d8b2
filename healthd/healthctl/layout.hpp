// Pieces the formatters share: "label:  value" lines that fit the width, and the colour of a
// result word.
#pragma once

#include <string>
#include <string_view>

#include "render_options.hpp"
#include "text.hpp"

namespace ar::healthctl {

inline constexpr std::size_t kLabelWidth = 14;  // "withheld:     " and the like

enum class ValueKind {
  prose,  // words: wrapped onto lines indented under the value
  path,   // a file or socket: shortened in the middle, keeping its end
};

// "label:        value\n" in the options' width (the long form: as it is). `value` is printable.
std::string labelled(std::string_view label, std::string_view value, ValueKind kind, const RenderOptions& o,
                     Color c = Color::none);

// red fault, yellow warn and error, green ok; nothing for the rest (n/a, unknown words).
Color colour_of_status(std::string_view status);

}  // namespace ar::healthctl
