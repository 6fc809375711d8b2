#include "table.hpp"

#include <algorithm>
#include <numeric>

namespace ar::healthctl {

namespace {
constexpr std::size_t kGap = 2;
constexpr std::size_t kLastMin = 12;  // the free text keeps at least this much room
}  // namespace

std::string render_table(const std::vector<Column>& columns, const std::vector<Row>& rows, const RenderOptions& o) {
  const auto n = columns.size();
  if (n == 0) return {};
  std::vector<std::size_t> widths(n);
  for (std::size_t c = 0; c < n; ++c) {
    widths[c] = display_width(columns[c].title);
    for (const auto& row : rows)
      if (c < row.size()) widths[c] = std::max(widths[c], display_width(row[c].text));
  }
  const auto limit = o.limit();
  if (limit > 0) {
    for (std::size_t c = 0; c + 1 < n; ++c)
      if (columns[c].cap > 0) widths[c] = std::min(widths[c], std::max(columns[c].cap, display_width(columns[c].title)));
    auto fixed = [&] { return std::accumulate(widths.begin(), widths.end() - 1, std::size_t{0}) + kGap * (n - 1); };
    // Too little left for the free text: the widest other column gives way, a column at a time.
    const auto last_min = std::min(kLastMin, widths[n - 1]);
    while (fixed() + last_min > limit) {
      auto widest = std::max_element(widths.begin(), widths.end() - 1);
      const auto c = static_cast<std::size_t>(widest - widths.begin());
      if (*widest <= std::max<std::size_t>(display_width(columns[c].title), 4)) break;
      --*widest;
    }
    widths[n - 1] = limit > fixed() ? limit - fixed() : kLastMin;
  }
  auto line = [&](const Row& row, bool title) {
    std::string out;
    for (std::size_t c = 0; c < n; ++c) {
      const Cell empty;
      const Cell& cell = c < row.size() ? row[c] : empty;
      const auto text = limit > 0 ? fit(cell.text, widths[c], o.ellipsis) : cell.text;
      const bool last = c + 1 == n;
      // The padding goes outside the colour, so a coloured word measures as its text.
      std::string padding;
      if (const auto w = display_width(text); !last && w < widths[c]) padding.assign(widths[c] - w, ' ');
      const auto shown = colour(text, title ? Color::none : cell.color, o.color);
      if (columns[c].right) out += padding + shown;
      else out += shown + (last ? "" : padding);
      if (!last) out.append(kGap, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  Row titles;
  for (const auto& c : columns) titles.push_back({c.title});
  std::string out = line(titles, true);
  for (const auto& row : rows) out += line(row, false);
  return out;
}

}  // namespace ar::healthctl
