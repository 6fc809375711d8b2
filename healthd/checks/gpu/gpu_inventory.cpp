#include "gpu_inventory.hpp"

#include <map>
#include <optional>
#include <string>

#include "vocabulary/remedy.hpp"
#include "collectors/gpu_snapshot.hpp"
#include "text/json_read.hpp"

namespace ar::healthd {
namespace {

using json = nlohmann::json;

// The results are our own, but read as data: a field of another type is taken as absent.
constexpr auto text = json_read::string_at;
constexpr auto flag = json_read::flag_at;

std::optional<std::uint64_t> count(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  const auto v = it->get<std::int64_t>();
  return v >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v)) : std::nullopt;
}

// A problem's status as a result's figures name it; anything else is no problem.
std::optional<Status> problem_status(const std::string& status) {
  for (auto s : {Status::warn, Status::fault, Status::error})
    if (status == to_string(s)) return s;
  return std::nullopt;
}

struct Gpu {
  json entry;
  std::string short_address;  // as XID events name GPUs
  std::int64_t xid_at = -1;
  Status health = Status::ok;  // entry["health"], typed
  unsigned last_xid = 0;  // 0: none
};

void note_problem(Gpu& g, const std::string& check, const std::string& status, const std::string& code,
                  const std::string& message) {
  const auto s = problem_status(status);
  if (!s) return;
  g.entry["problems"].push_back({{"check", check}, {"code", code}, {"message", message}});
  if (display_rank(*s) > display_rank(g.health)) {
    g.health = *s;
    g.entry["health"] = to_string(*s);
  }
}

Gpu& gpu_of(std::map<unsigned, Gpu>& gpus, unsigned index, const json& figures) {
  auto [it, added] = gpus.try_emplace(index);
  auto& g = it->second;
  if (added)
    g.entry = {{"index", index},        {"bus_id", ""},           {"uuid", ""},       {"name", ""},
               {"health", "ok"},        {"problems", json::array()}, {"ecc_uncorrected", nullptr},
               {"ecc_corrected", nullptr}, {"remap", nullptr},    {"xid", nullptr}};
  // The first result that names a field wins; every gpu.* result names the same GPU the same way.
  for (const char* key : {"bus_id", "uuid", "name"})
    if (g.entry[key].get<std::string>().empty()) g.entry[key] = text(figures, key);
  if (g.short_address.empty() && !g.entry["bus_id"].get<std::string>().empty())
    g.short_address = short_pci_address(g.entry["bus_id"].get<std::string>());
  return g;
}

void take_memory_figures(Gpu& g, const json& figures) {
  if (auto v = count(figures, "ecc_uncorrected_volatile")) g.entry["ecc_uncorrected"] = *v;
  if (auto v = count(figures, "ecc_corrected_volatile")) g.entry["ecc_corrected"] = *v;
  auto remap = figures.find("row_remap");
  if (remap != figures.end() && remap->is_object()) {
    json r = {{"corrected", count(*remap, "corrected").value_or(0)},
              {"uncorrected", count(*remap, "uncorrected").value_or(0)},
              {"pending", flag(*remap, "pending")},
              {"failure", flag(*remap, "failure")}};
    g.entry["remap"] = std::move(r);
  }
}

// One gpu.* result: each GPU's figures, and its own verdict where it has a problem.
void take_gpu_result(std::map<unsigned, Gpu>& gpus, const std::string& check, const json& detail) {
  auto list = detail.find("gpus");
  if (list == detail.end() || !list->is_array()) return;
  for (const auto& figures : *list) {
    if (!figures.is_object()) continue;
    auto index = count(figures, "index");
    if (!index || *index > 0xffff) continue;
    auto& g = gpu_of(gpus, static_cast<unsigned>(*index), figures);
    if (check == "gpu.memory") take_memory_figures(g, figures);
    note_problem(g, check, text(figures, "status"), text(figures, "code"), text(figures, "message"));
  }
}

// The gpu_xid result: each event goes to the GPU at its PCI address.
void take_xid_result(std::map<unsigned, Gpu>& gpus, const json& detail) {
  auto events = detail.find("events");
  if (events == detail.end() || !events->is_array()) return;
  for (const auto& e : *events) {
    if (!e.is_object()) continue;
    const auto address = text(e, "gpu");
    auto xid = count(e, "xid");
    if (address.empty() || !xid) continue;
    for (auto& [index, g] : gpus) {
      if (g.short_address != address) continue;
      const auto at = e.contains("last_ms") && e["last_ms"].is_number_integer() ? e["last_ms"].get<std::int64_t>() : 0;
      if (at >= g.xid_at) {
        g.xid_at = at;
        g.entry["xid"] = {{"xid", *xid}, {"at_ms", at}, {"count", count(e, "count").value_or(1)}};
        g.last_xid = static_cast<unsigned>(*xid);
      }
      // As the XID check judges it: its action once the rule's threshold is met, a warning before.
      const bool active = flag(e, "active");
      const auto action = parse_remedy(text(e, "action")).value_or(Remedy::drain);
      const auto status = active ? to_string(status_for(action)) : std::string("warn");
      note_problem(g, "gpu_xid", status, "GPU-XID-" + std::to_string(*xid), text(e, "text"));
    }
  }
}

// Every GPU the results name, with its figures, problems and newest XID.
std::map<unsigned, Gpu> gpus_of(const json& results) {
  std::map<unsigned, Gpu> gpus;
  if (!results.is_array()) return gpus;
  const json* xids = nullptr;
  for (const auto& r : results) {
    if (!r.is_object()) continue;
    const auto check = text(r, "check");
    auto detail = r.find("detail");
    if (detail == r.end() || !detail->is_object()) continue;
    if (check.starts_with("gpu.")) take_gpu_result(gpus, check, *detail);
    else if (check == "gpu_xid") xids = &*detail;
  }
  // After every GPU is known: the XID check judges after the GPU check, but a list in another order
  // must not lose its events.
  if (xids != nullptr) take_xid_result(gpus, *xids);
  return gpus;
}

}  // namespace

json gpu_inventory_of(const json& results) {
  json out = json::array();
  for (auto& [index, g] : gpus_of(results)) out.push_back(std::move(g.entry));
  return out;
}

DeviceList gpu_inventory(const std::vector<CheckResult>& results) {
  json list = json::array();
  for (const auto& r : results)
    if (r.check.starts_with("gpu.") || r.check == "gpu_xid") list.push_back(r.to_json());
  DeviceList out;
  for (auto& [index, g] : gpus_of(list)) {
    out.readings.gpus.push_back(GpuReading{index, g.entry["uuid"].get<std::string>(), g.entry["bus_id"].get<std::string>(),
                                           g.entry["name"].get<std::string>(), g.health, g.last_xid});
    out.listed.push_back(std::move(g.entry));
  }
  return out;
}

}  // namespace ar::healthd
