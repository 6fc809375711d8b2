// `healthctl gpus`: one line per NVIDIA GPU of the status reply's health.gpus, then its problems.
#include <fmt/format.h>

#include "clock_text.hpp"
#include "format.hpp"
#include "layout.hpp"
#include "reply_fields.hpp"
#include "table.hpp"

namespace ar::healthctl {

namespace {

// "GPU-" and 8 hex digits tell the GPUs of a node apart; the long form shows the whole UUID.
constexpr std::size_t kUuidCap = 13;

// "00000000:18:00.0" as lspci writes it, "18:00.0", when the PCI domain is 0 (nearly always);
// the long form keeps NVML's whole form.
std::string bus_id_text(const std::string& bus, bool long_form) {
  if (long_form) return bus;
  const auto colon = bus.find(':');
  if (colon == std::string::npos || colon == 0) return bus;
  if (bus.find_first_not_of('0') != colon) return bus;
  return bus.substr(colon + 1);
}

std::string count_or_dash(const nlohmann::json& j, const char* key) {
  return has_number(j, key) ? std::to_string(int_of(j, key)) : "-";
}

std::string ecc_text(const nlohmann::json& g) {
  if (!has_number(g, "ecc_uncorrected") && !has_number(g, "ecc_corrected")) return "-";
  return count_or_dash(g, "ecc_uncorrected") + "/" + count_or_dash(g, "ecc_corrected");
}

Cell remap_cell(const nlohmann::json& g) {
  const auto& remap = object_of(g, "remap");
  if (remap.empty()) return {"-"};
  Cell c{count_or_dash(remap, "corrected") + "/" + count_or_dash(remap, "uncorrected")};
  // A failed remap (replace the GPU) outranks a pending one (reset it): one word, the worse.
  if (bool_of(remap, "failure")) {
    c.text += " FAILED";
    c.color = Color::red;
  } else if (bool_of(remap, "pending")) {
    c.text += " pending";
    c.color = Color::yellow;
  }
  return c;
}

std::string xid_text(const nlohmann::json& g, std::int64_t now_ms) {
  const auto& xid = object_of(g, "xid");
  if (xid.empty() || !has_number(xid, "xid")) return "-";
  std::string s = std::to_string(int_of(xid, "xid"));
  if (auto n = int_of(xid, "count", 1); n > 1) s += fmt::format(" x{}", n);
  if (has_number(xid, "at_ms")) s += " " + age(int_of(xid, "at_ms"), now_ms);
  return s;
}

}  // namespace

std::string format_gpus(const nlohmann::json& d, const RenderOptions& o) {
  const auto node = text_of(d, "node", "?");
  const auto& health = object_of(d, "health");
  if (!health.contains("gpus"))
    return fmt::format("healthd {} on {} does not report GPUs one by one (no health.gpus in its status)\n",
                       text_of(d, "version", "?"), node);
  const auto& gpus = array_of(health, "gpus");
  if (gpus.empty()) return fmt::format("no NVIDIA GPU seen by healthd on {}\n", node);

  std::vector<Row> rows;
  std::vector<std::string> problems;
  for (const auto& g : gpus) {
    if (!g.is_object()) continue;
    const auto index = count_or_dash(g, "index");
    const auto status = text_of(g, "health", "?");
    Row row{{index, Color::none},
            {bus_id_text(text_of(g, "bus_id", "?"), o.long_form)},
            {text_of(g, "uuid", "?")},
            {status, colour_of_status(status)},
            {ecc_text(g)},
            remap_cell(g)};
    if (o.long_form) row.push_back({text_of(g, "name", "?")});
    row.push_back({xid_text(g, o.now_ms)});
    rows.push_back(std::move(row));
    for (const auto& p : array_of(g, "problems")) {
      if (!p.is_object()) continue;
      std::string line = fmt::format("GPU {}: {}", index, text_of(p, "check", "?"));
      if (auto code = text_of(p, "code"); !code.empty()) line += " " + code;
      if (auto msg = text_of(p, "message"); !msg.empty()) line += ": " + msg;
      problems.push_back(fit(line, o.limit(), o.ellipsis));
    }
  }
  std::vector<Column> columns{{"INDEX", 0, true}, {"BUS ID"}, {"UUID", kUuidCap}, {"HEALTH"}, {"ECC U/C"},
                              {"REMAP C/U"}};
  if (o.long_form) columns.push_back({"NAME"});
  columns.push_back({"XID"});
  std::string out = render_table(columns, rows, o);
  if (!problems.empty()) {
    out += "\n";
    for (const auto& p : problems) out += p + "\n";
  }
  return out;
}

}  // namespace ar::healthctl
