#include "gpu_judges.hpp"

#include <algorithm>
#include <map>

#include "collectors/nvml/nvml_api.hpp"

namespace ar::healthd {
namespace {

// One thing found on one GPU; the worst of them becomes the result.
struct Finding {
  Status status = Status::ok;
  Remedy action = Remedy::none;
  std::string code;
  std::string message;
};

int finding_rank(const Finding& f) {
  int s = f.status == Status::fault ? 20 : f.status == Status::warn ? 10 : 0;
  return s + severity(f.action);
}

Finding finding(Remedy action, std::string code, std::string message) {
  Finding f;
  f.action = action;
  f.status = status_for(action);
  f.code = std::move(code);
  f.message = std::move(message);
  return f;
}

// Collects findings and per-GPU detail for one area and turns them into its result. A finding about
// one GPU is added with that GPU, so its figures carry its own verdict ("status", and "code" and
// "message" when not ok): the GPU inventory (gpu_inventory.hpp) and the metrics read each GPU's
// health there instead of guessing it from the result's message.
class Verdict {
 public:
  explicit Verdict(std::string check) { r_.check = std::move(check); }
  void add(const Finding& f) {
    if (f.status != Status::ok) ++problems_;
    if (!worst_ || finding_rank(f) > finding_rank(*worst_)) worst_ = f;
  }
  void add(const GpuSnapshot& g, const Finding& f) {
    add(f);
    auto& worst = worst_of_gpu_[g.index];
    if (f.status != Status::ok && (!worst || finding_rank(f) > finding_rank(*worst))) worst = f;
  }
  void gpu(const GpuSnapshot& g, nlohmann::json figures) {
    figures["index"] = g.index;
    figures["bus_id"] = g.bus_id;
    figures["uuid"] = g.uuid;
    figures["name"] = g.name;
    gpus_.push_back(std::move(figures));
  }
  void not_checked(std::string why) { not_checked_ = std::move(why); }
  CheckResult result(std::string ok_message) {
    r_.at = std::chrono::system_clock::now();
    for (auto& figures : gpus_) {
      // Findings may come before the GPU's figures (NVLink): matched by index, not by order.
      auto it = worst_of_gpu_.find(figures["index"].get<unsigned>());
      const Finding* worst = it != worst_of_gpu_.end() && it->second ? &*it->second : nullptr;
      figures["status"] = to_string(worst ? worst->status : Status::ok);
      if (worst) {
        figures["code"] = worst->code;
        figures["message"] = worst->message;
      }
    }
    // The GPUs the result's fault is on: what a GPU reset resets.
    if (worst_ && worst_->status == Status::fault)
      for (const auto& figures : gpus_) {
        auto it = worst_of_gpu_.find(figures["index"].get<unsigned>());
        if (it != worst_of_gpu_.end() && it->second && it->second->code == worst_->code)
          r_.gpus.push_back(figures.value("bus_id", std::string()));
      }
    r_.detail = {{"gpus", gpus_}};
    if (worst_ && worst_->status != Status::ok) {
      r_.status = worst_->status;
      r_.action = worst_->action;
      r_.code = worst_->code;
      r_.message = worst_->message;
      if (problems_ > 1) r_.message += " (and " + std::to_string(problems_ - 1) + " more)";
    } else if (!not_checked_.empty()) {
      r_.message = "not checked: " + not_checked_;
      r_.detail["checked"] = false;
    } else {
      r_.message = std::move(ok_message);
    }
    return r_;
  }

 private:
  CheckResult r_;
  std::optional<Finding> worst_;
  std::map<unsigned, std::optional<Finding>> worst_of_gpu_;  // by GPU index
  int problems_ = 0;
  nlohmann::json gpus_ = nlohmann::json::array();
  std::string not_checked_;
};

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string missing_for(const GpuFleetSnapshot& fleet, const std::string& what) {
  for (const auto& m : fleet.missing_symbols)
    if (m.disables == what) return "this driver's NVML lacks " + m.symbol;
  return "the driver does not report " + what;
}

std::uint64_t growth(std::optional<std::uint64_t> now, std::optional<std::uint64_t> before) {
  // A counter that went down was reset (driver reload, GPU reset): count from the new value.
  if (!now) return 0;
  if (!before || *now < *before) return 0;
  return *now - *before;
}

}  // namespace

std::string gpu_label(const GpuSnapshot& gpu) {
  std::string s = "GPU " + std::to_string(gpu.index);
  std::string ids = gpu.bus_id;
  if (!gpu.uuid.empty()) ids += (ids.empty() ? "" : ", ") + gpu.uuid;
  if (!ids.empty()) s += " (" + ids + ")";
  return s;
}

CheckResult judge_gpu_nvml(const GpuFleetSnapshot& fleet) {
  CheckResult r;
  r.check = "gpu.nvml";
  r.at = std::chrono::system_clock::now();
  nlohmann::json missing = nlohmann::json::array();
  for (const auto& m : fleet.missing_symbols) missing.push_back(m.text());
  r.detail = {{"loaded", fleet.nvml_loaded}, {"driver_version", fleet.driver_version}, {"missing_symbols", missing}};
  if (!fleet.nvml_loaded) {
    r.message = "not applicable: NVML not available (" + fleet.load_error + ")";
    r.detail["applicable"] = false;
    r.applicable = false;
    return r;
  }
  if (!fleet.load_error.empty()) {
    // Loaded, but the device list itself failed: the driver is in trouble.
    r.status = Status::fault;
    r.action = Remedy::drain;
    r.code = "GPU-NVML-ERROR";
    r.message = fleet.load_error;
    return r;
  }
  r.message = "NVML driver " + fleet.driver_version + ", " + std::to_string(fleet.gpus.size()) + " GPU(s)";
  if (!fleet.missing_symbols.empty())
    r.message += "; disabled by this driver: " + std::to_string(fleet.missing_symbols.size()) + " entry point(s) missing";
  return r;
}

CheckResult judge_gpu_count(const GpuFleetSnapshot& fleet, const GpuThresholds& t) {
  Verdict v("gpu.count");
  const bool expected = t.required || t.expected_count > 0;
  if (!fleet.nvml_loaded) {
    if (expected)
      v.add(finding(Remedy::drain, "GPU-NVML-MISSING", "GPUs are expected but NVML cannot be used: " + fleet.load_error));
    else
      v.not_checked("no NVML on this node (no GPUs expected)");
    return v.result("");
  }
  const auto seen = static_cast<std::uint32_t>(fleet.gpus.size());
  if (t.expected_count > 0 && seen < t.expected_count)
    v.add(finding(Remedy::drain, "GPU-COUNT",
                  std::to_string(seen) + " of " + std::to_string(t.expected_count) + " GPUs visible to NVML"));
  for (const auto& g : fleet.gpus) {
    v.gpu(g, {{"lost", opt(g.lost)}});
    // A GPU NVML calls lost has fallen off the bus: only a reboot brings it back.
    if (g.lost) v.add(g, finding(Remedy::reboot, "GPU-LOST", gpu_label(g) + " is lost: " + *g.lost));
  }
  return v.result(std::to_string(seen) + " GPU(s)" +
                  (t.expected_count ? " of " + std::to_string(t.expected_count) + " expected" : ""));
}

CheckResult judge_gpu_memory(const GpuFleetSnapshot& fleet, const GpuThresholds& t) {
  Verdict v("gpu.memory");
  bool any = false;
  for (const auto& g : fleet.gpus) {
    nlohmann::json fig = {{"ecc_uncorrected_volatile", opt(g.ecc_uncorrected_volatile)},
                          {"ecc_corrected_volatile", opt(g.ecc_corrected_volatile)},
                          {"retired_pages_sbe", opt(g.retired_pages_sbe)},
                          {"retired_pages_dbe", opt(g.retired_pages_dbe)},
                          {"retired_pages_pending", opt(g.retired_pages_pending)}};
    if (g.row_remap)
      fig["row_remap"] = {{"corrected", g.row_remap->corrected}, {"uncorrected", g.row_remap->uncorrected},
                          {"pending", g.row_remap->pending}, {"failure", g.row_remap->failure}};
    v.gpu(g, fig);
    const auto who = gpu_label(g);
    if (g.ecc_uncorrected_volatile || g.row_remap || g.retired_pages_pending) any = true;
    // NVIDIA's memory error recovery: a failed remap means replace the board; a pending remap or page
    // retirement is finished by a GPU reset; uncorrected errors since the last reset need one too.
    if (g.row_remap && g.row_remap->failure)
      v.add(g, finding(t.memory_action, "GPU-ROW-REMAP-FAILED", who + ": row remapping failed (replace the GPU)"));
    if (g.row_remap && g.row_remap->pending)
      v.add(g, finding(t.memory_action, "GPU-ROW-REMAP-PENDING", who + ": a row remap is pending (reset the GPU)"));
    if (g.retired_pages_pending && *g.retired_pages_pending)
      v.add(g, finding(t.memory_action, "GPU-PAGE-RETIREMENT-PENDING", who + ": page retirement pending (reset the GPU)"));
    if (g.ecc_uncorrected_volatile && *g.ecc_uncorrected_volatile > t.ecc_uncorrected_max)
      v.add(g, finding(t.memory_action, "GPU-ECC-UNCORRECTED",
                    who + ": " + std::to_string(*g.ecc_uncorrected_volatile) +
                        " uncorrected ECC errors since the last reset (reset the GPU)"));
    const unsigned retired = g.retired_pages_sbe.value_or(0) + g.retired_pages_dbe.value_or(0);
    if (retired > t.retired_pages_max)
      v.add(g, finding(t.memory_action, "GPU-RETIRED-PAGES",
                    who + ": " + std::to_string(retired) + " retired pages (more than " +
                        std::to_string(t.retired_pages_max) + "; replace the GPU)"));
  }
  if (!any && !fleet.gpus.empty()) v.not_checked(missing_for(fleet, "row remapping"));
  return v.result("no memory errors on " + std::to_string(fleet.gpus.size()) + " GPU(s)");
}

CheckResult judge_gpu_clocks(const GpuFleetSnapshot& fleet, const GpuThresholds& t) {
  Verdict v("gpu.clocks");
  bool any = false;
  for (const auto& g : fleet.gpus) {
    v.gpu(g, {{"clock_event_reasons", opt(g.clock_event_reasons)}});
    if (!g.clock_event_reasons) continue;
    any = true;
    const auto r = *g.clock_event_reasons;
    std::string why;
    if (r & nvmlClocksThrottleReasonHwThermalSlowdown) why += "hardware thermal slowdown, ";
    if (r & nvmlClocksThrottleReasonHwPowerBrakeSlowdown) why += "power brake slowdown, ";
    if (r & nvmlClocksThrottleReasonHwSlowdown) why += "hardware slowdown, ";
    if (r & nvmlClocksEventReasonSwThermalSlowdown) why += "software thermal slowdown, ";
    if (!why.empty())
      v.add(g, finding(t.clock_slowdown_action, "GPU-CLOCK-SLOWDOWN", gpu_label(g) + ": " + why.substr(0, why.size() - 2)));
  }
  if (!any && !fleet.gpus.empty()) v.not_checked(missing_for(fleet, "clock slowdown"));
  return v.result("no clock slowdown");
}

CheckResult judge_gpu_pcie(const GpuFleetSnapshot& fleet, const GpuThresholds& t) {
  Verdict v("gpu.pcie");
  bool any = false;
  for (const auto& g : fleet.gpus) {
    v.gpu(g, {{"gen", opt(g.pcie_gen)}, {"max_gen", opt(g.pcie_max_gen)}, {"width", opt(g.pcie_width)},
              {"max_width", opt(g.pcie_max_width)}});
    if (g.pcie_width && g.pcie_max_width) {
      any = true;
      if (*g.pcie_width < *g.pcie_max_width)
        v.add(g, finding(t.pcie_width_action, "GPU-PCIE-WIDTH",
                      gpu_label(g) + ": PCIe link x" + std::to_string(*g.pcie_width) + " of x" +
                          std::to_string(*g.pcie_max_width)));
    }
    // An idle GPU lowers its link generation to save power; only a busy one's counts as degraded.
    const bool idle = g.clock_event_reasons && (*g.clock_event_reasons & nvmlClocksEventReasonGpuIdle);
    if (g.pcie_gen && g.pcie_max_gen) {
      any = true;
      if (*g.pcie_gen < *g.pcie_max_gen && !idle)
        v.add(g, finding(t.pcie_gen_action, "GPU-PCIE-GEN",
                      gpu_label(g) + ": PCIe link gen " + std::to_string(*g.pcie_gen) + " of gen " +
                          std::to_string(*g.pcie_max_gen) + " while busy"));
    }
  }
  if (!any && !fleet.gpus.empty()) v.not_checked(missing_for(fleet, "PCIe link"));
  return v.result("PCIe links at full width and generation");
}

CheckResult judge_gpu_nvlink(const GpuFleetSnapshot& fleet, const GpuFleetSnapshot* previous, const GpuThresholds& t) {
  Verdict v("gpu.nvlink");
  bool any = false;
  for (const auto& g : fleet.gpus) {
    const GpuSnapshot* before = nullptr;
    if (previous)
      for (const auto& p : previous->gpus)
        if (p.index == g.index && p.uuid == g.uuid) before = &p;
    nlohmann::json links = nlohmann::json::array();
    unsigned active = 0;
    std::string down;
    for (const auto& l : g.nvlinks) {
      const NvLinkSnapshot* lb = nullptr;
      if (before)
        for (const auto& b : before->nvlinks)
          if (b.index == l.index) lb = &b;
      std::uint64_t rise = 0;
      if (lb)
        rise = growth(l.replay, lb->replay) + growth(l.recovery, lb->recovery) + growth(l.crc_flit, lb->crc_flit) +
               growth(l.crc_data, lb->crc_data) + growth(l.ecc_data, lb->ecc_data);
      links.push_back({{"link", l.index}, {"active", l.active}, {"error_rise", rise}});
      if (l.active) ++active;
      // Without an expected count, a link once seen active must stay so.
      if (!l.active && t.nvlink_expected_links == 0 && lb && lb->active) down += std::to_string(l.index) + " ";
      if (rise > t.nvlink_error_rise_max)
        v.add(g, finding(t.nvlink_error_action, "GPU-NVLINK-ERRORS",
                      gpu_label(g) + ": NVLink " + std::to_string(l.index) + " errors rose by " + std::to_string(rise) +
                          " since the last check"));
    }
    v.gpu(g, {{"links", links}, {"active", active}});
    if (!g.nvlink_supported) continue;
    any = true;
    if (t.nvlink_expected_links > 0 && active < t.nvlink_expected_links)
      v.add(g, finding(t.nvlink_down_action, "GPU-NVLINK-DOWN",
                    gpu_label(g) + ": " + std::to_string(active) + " of " + std::to_string(t.nvlink_expected_links) +
                        " NVLinks active"));
    else if (!down.empty())
      v.add(g, finding(t.nvlink_down_action, "GPU-NVLINK-DOWN", gpu_label(g) + ": NVLink " + down + "went inactive"));
  }
  if (!any && !fleet.gpus.empty()) v.not_checked("no NVLink on these GPUs");
  return v.result("NVLinks active, errors steady");
}

CheckResult judge_gpu_recovery(const GpuFleetSnapshot& fleet) {
  Verdict v("gpu.recovery");
  bool any = false;
  for (const auto& g : fleet.gpus) {
    v.gpu(g, {{"recovery_action", opt(g.recovery_action)}});
    if (!g.recovery_action) continue;
    any = true;
    // The driver's own verdict (r570+): it outranks what the XID table would guess.
    switch (*g.recovery_action) {
      case NVML_GPU_RECOVERY_ACTION_NONE: break;
      case NVML_GPU_RECOVERY_ACTION_GPU_RESET:
        v.add(g, finding(Remedy::drain, "GPU-RECOVERY-RESET", gpu_label(g) + ": the driver asks for a GPU reset"));
        break;
      case NVML_GPU_RECOVERY_ACTION_NODE_REBOOT:
        v.add(g, finding(Remedy::reboot, "GPU-RECOVERY-REBOOT", gpu_label(g) + ": the driver asks for a node reboot"));
        break;
      case NVML_GPU_RECOVERY_ACTION_DRAIN_P2P:
        v.add(g, finding(Remedy::drain, "GPU-RECOVERY-DRAIN-P2P", gpu_label(g) + ": the driver asks to drain peer-to-peer work"));
        break;
      case NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
        v.add(g, finding(Remedy::drain, "GPU-RECOVERY-DRAIN-AND-RESET", gpu_label(g) + ": the driver asks to drain and reset the GPU"));
        break;
      default:
        v.add(g, finding(Remedy::drain, "GPU-RECOVERY-UNKNOWN",
                      gpu_label(g) + ": unknown recovery action " + std::to_string(*g.recovery_action)));
    }
  }
  if (!any && !fleet.gpus.empty()) v.not_checked(missing_for(fleet, "GPU recovery action"));
  return v.result("the driver asks for no recovery action");
}

CheckResult judge_gpu_temperature(const GpuFleetSnapshot& fleet, const GpuThresholds& t) {
  Verdict v("gpu.temperature");
  bool any = false;
  unsigned hottest = 0;
  for (const auto& g : fleet.gpus) {
    v.gpu(g, {{"temperature_c", opt(g.temperature_c)}});
    if (!g.temperature_c) continue;
    any = true;
    hottest = std::max(hottest, *g.temperature_c);
    if (*g.temperature_c >= t.temperature_max_c)
      v.add(g, finding(t.temperature_action, "GPU-TEMPERATURE",
                    gpu_label(g) + ": " + std::to_string(*g.temperature_c) + " C (limit " +
                        std::to_string(t.temperature_max_c) + " C)"));
  }
  if (!any && !fleet.gpus.empty()) v.not_checked(missing_for(fleet, "temperature"));
  return v.result("hottest GPU " + std::to_string(hottest) + " C");
}

CheckResult judge_gpu_power(const GpuFleetSnapshot& fleet, const GpuThresholds& t) {
  Verdict v("gpu.power");
  for (const auto& g : fleet.gpus) {
    v.gpu(g, {{"power_mw", opt(g.power_mw)}, {"power_limit_mw", opt(g.power_limit_mw)},
              {"persistence_mode", opt(g.persistence_mode)}});
    if (t.persistence_required && g.persistence_mode && !*g.persistence_mode)
      v.add(g, finding(Remedy::warn, "GPU-PERSISTENCE-OFF", gpu_label(g) + ": persistence mode is off"));
    // Drawing well past the enforced limit means the power capping itself misbehaves.
    if (t.power_check && g.power_mw && g.power_limit_mw && *g.power_limit_mw > 0 &&
        *g.power_mw > *g.power_limit_mw + *g.power_limit_mw / 10)
      v.add(g, finding(Remedy::warn, "GPU-POWER",
                    gpu_label(g) + ": drawing " + std::to_string(*g.power_mw / 1000) + " W over its " +
                        std::to_string(*g.power_limit_mw / 1000) + " W limit"));
  }
  return v.result("power and persistence as expected");
}

}  // namespace ar::healthd
