// A text table: a title line and rows, columns two spaces apart, each as wide as its widest cell.
// Fitted to the options' width: the last column (the free text: a detail, a message) takes what
// is left and is cut with the ellipsis; a column with a cap is cut to it first, and when that is not
// enough the widest columns give way. The long form cuts nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "render_options.hpp"
#include "text.hpp"

namespace ar::healthctl {

struct Cell {
  std::string text;
  Color color = Color::none;
};

struct Column {
  std::string title;
  std::size_t cap = 0;  // when fitting: at most this many columns (0: no cap)
  bool right = false;   // numbers: aligned right
};

using Row = std::vector<Cell>;

std::string render_table(const std::vector<Column>& columns, const std::vector<Row>& rows, const RenderOptions& o);

}  // namespace ar::healthctl
