#include "edac_check.hpp"

#include <algorithm>
#include <limits>

#include "checks/result_util.hpp"

namespace ar::healthd {

EdacRiseWindow::EdacRiseWindow(std::chrono::seconds window)
    : window_(window), granularity_(std::max<std::chrono::milliseconds>(window_ / 128, std::chrono::milliseconds(1))) {}

std::uint64_t EdacRiseWindow::observe(const std::string& key, std::uint64_t value, Clock::time_point now) {
  auto& s = samples_[key];
  if (!s.empty() && value < s.back().second) s.clear();  // reset: start over from here
  if (s.empty() || value != s.back().second) {
    // One sample per span of window/128 besides the baseline: a change within the newest sample's span
    // replaces it (the value it had earlier in the span is lost, so a rise can only look larger).
    const auto span = [this](Clock::time_point t) { return t.time_since_epoch() / granularity_; };
    if (s.size() >= 2 && span(s.back().first) == span(now))
      s.back() = {now, value};
    else
      s.emplace_back(now, value);
  }
  // Keep the newest sample at or before the window's start as the baseline; drop older ones.
  while (s.size() > 1 && s[1].first <= now - window_) s.pop_front();
  return s.back().second - s.front().second;
}

void EdacRiseWindow::keep_only(const std::set<std::string>& keys) {
  for (auto it = samples_.begin(); it != samples_.end();) it = keys.contains(it->first) ? std::next(it) : samples_.erase(it);
}

std::size_t EdacRiseWindow::samples(const std::string& key) const {
  auto it = samples_.find(key);
  return it == samples_.end() ? 0 : it->second.size();
}

namespace {

std::uint64_t add_capped(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

// "3 DIMMs", "1 DIMM".
std::string plural(std::uint64_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string errors_word(std::uint64_t n, const char* kind) { return plural(n, std::string(kind) + " memory error"); }

// "CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (mc0/dimm0)", or "mc0/dimm0" without a label.
std::string dimm_text(const EdacController& c, const EdacDimm& d) {
  const auto where = c.name + "/" + d.name;
  return d.label.empty() ? where : d.label + " (" + where + ")";
}

nlohmann::json opt(const std::optional<std::uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// The message of a node EDAC says nothing about, or "" when it has controllers to judge.
std::string not_applicable(const EdacSnapshot& snap) {
  if (!snap.present)
    return std::string("not applicable: no EDAC driver loaded (no ") + kEdacMcDir + "; common on VMs)";
  if (snap.controllers.empty() && snap.errors.empty())
    return "not applicable: no EDAC memory controller registered (no EDAC driver for this platform; common on VMs)";
  return {};
}

void append_notes(CheckResult& r, const std::vector<std::string>& notes) {
  // Beside a pass or a broken check; a finding's message (a drain reason) stays about the finding.
  if (r.code.empty() && !notes.empty()) r.message += "; not read: " + notes.front() + and_more(notes.size());
}

CheckResult judge_uncorrected(const EdacSnapshot& snap, const EdacConfig& config) {
  if (auto na = not_applicable(snap); !na.empty()) return not_applicable_result("edac.uncorrected", na);
  std::vector<std::string> faults, problems = snap.errors, notes;
  nlohmann::json controllers = nlohmann::json::array();
  std::size_t dimm_count = 0;
  for (const auto& c : snap.controllers) {
    nlohmann::json dimms = nlohmann::json::array();
    std::vector<std::string> named;  // the DIMMs with an uncorrectable error of their own
    std::uint64_t dimm_sum = 0;
    for (const auto& d : c.dimms) {
      dimms.push_back({{"name", d.name}, {"label", d.label}, {"ue_count", opt(d.ue_count)}, {"error", d.ue_error}});
      if (!d.ue_error.empty()) problems.push_back(d.ue_error);
      if (d.ue_count.value_or(0) > 0) {
        dimm_sum = add_capped(dimm_sum, *d.ue_count);
        named.push_back(dimm_text(c, d));
      }
    }
    dimm_count += c.dimms.size();
    if (!c.ue_error.empty()) problems.push_back(c.ue_error);
    notes.insert(notes.end(), c.notes.begin(), c.notes.end());
    // The controller's count includes the errors no DIMM could be named for; a DIMM's count above it
    // (an unreadable or inconsistent controller file) still counts.
    if (const auto count = std::max(c.ue_count.value_or(0), dimm_sum); count > 0) {
      auto m = c.name + ": " + errors_word(count, "uncorrected");
      if (named.empty())
        m += " (no DIMM named by the driver)";
      else
        m += " on DIMM " + named.front() + (named.size() > 1 ? " and " + plural(named.size() - 1, "more DIMM") : "");
      faults.push_back(std::move(m));
    }
    controllers.push_back({{"name", c.name}, {"mc_name", c.mc_name}, {"size_mb", opt(c.size_mb)}, {"ue_count", opt(c.ue_count)},
                           {"error", c.ue_error}, {"dimms", dimms}});
  }
  CheckResult r;
  if (!faults.empty() && config.uncorrected_action != Remedy::none)
    r = make_finding("edac.uncorrected", "EDAC-UE", config.uncorrected_action, faults.front() + and_more(faults.size()));
  else if (!faults.empty())
    r = make_result("edac.uncorrected", Status::ok,
                    faults.front() + and_more(faults.size()) + "; not acted on (uncorrected_action = \"none\")");
  else if (!problems.empty())  // the check could not look: says nothing about the node
    r = make_result("edac.uncorrected", Status::error, "cannot read: " + problems.front() + and_more(problems.size()));
  else
    r = make_result("edac.uncorrected", Status::ok,
                    "no uncorrected memory errors on " + plural(snap.controllers.size(), "memory controller") + " (" +
                        plural(dimm_count, "DIMM") + ")");
  append_notes(r, notes);
  r.detail = {{"controllers", controllers}, {"errors", problems}, {"notes", notes}};
  return r;
}

CheckResult judge_corrected(const EdacSnapshot& snap, const EdacConfig& config, EdacRiseWindow& window,
                            EdacRiseWindow::Clock::time_point now) {
  if (auto na = not_applicable(snap); !na.empty()) {
    window.keep_only({});
    return not_applicable_result("edac.corrected", na);
  }
  const auto window_s = std::to_string(config.corrected_window.count());
  std::set<std::string> keys;
  std::vector<std::string> over, problems = snap.errors;
  nlohmann::json controllers = nlohmann::json::array();
  nlohmann::json over_detail = nlohmann::json::array();
  std::uint64_t total = 0;
  for (const auto& c : snap.controllers) {
    nlohmann::json dimms = nlohmann::json::array();
    const EdacDimm* top = nullptr;  // the DIMM whose count rose most within the window
    std::uint64_t top_rise = 0;
    for (const auto& d : c.dimms) {
      std::optional<std::uint64_t> rise;
      if (d.ce_count) {
        const auto key = c.name + "/" + d.name;
        keys.insert(key);
        rise = window.observe(key, *d.ce_count, now);
        if (*rise > top_rise) {
          top = &d;
          top_rise = *rise;
        }
      }
      if (!d.ce_error.empty()) problems.push_back(d.ce_error);
      dimms.push_back({{"name", d.name}, {"label", d.label}, {"ce_count", opt(d.ce_count)}, {"rise", opt(rise)}, {"error", d.ce_error}});
    }
    std::optional<std::uint64_t> rise;
    if (c.ce_count) {
      keys.insert(c.name);
      rise = window.observe(c.name, *c.ce_count, now);
      total = add_capped(total, *c.ce_count);
    }
    if (!c.ce_error.empty()) problems.push_back(c.ce_error);
    if (config.max_corrected_rise && rise && *rise > *config.max_corrected_rise) {
      auto m = c.name + ": " + errors_word(*rise, "corrected") + " within " + window_s + " s (limit " +
               std::to_string(*config.max_corrected_rise) + ")";
      if (top != nullptr) m += ", most on DIMM " + dimm_text(c, *top);
      over.push_back(std::move(m));
      over_detail.push_back({{"controller", c.name}, {"rise", *rise}});
    }
    controllers.push_back({{"name", c.name}, {"mc_name", c.mc_name}, {"ce_count", opt(c.ce_count)}, {"rise", opt(rise)},
                           {"error", c.ce_error}, {"dimms", dimms}});
  }
  window.keep_only(keys);

  const auto since = errors_word(total, "corrected") + " since the EDAC counters were reset, on " +
                     plural(snap.controllers.size(), "memory controller");
  const auto cannot_read = problems.empty() ? std::string() : "cannot read: " + problems.front() + and_more(problems.size());
  CheckResult r;
  if (!config.max_corrected_rise) {  // shown, never judged
    r = make_result("edac.corrected", Status::ok, since + " (not judged: max_corrected_rise unset)");
    if (!cannot_read.empty()) r.message += "; " + cannot_read;
  } else if (!over.empty() && config.corrected_action != Remedy::none) {
    r = make_finding("edac.corrected", "EDAC-CE", config.corrected_action, over.front() + and_more(over.size()));
  } else if (!over.empty()) {
    r = make_result("edac.corrected", Status::ok, over.front() + and_more(over.size()) + "; not acted on (corrected_action = \"none\")");
  } else if (!problems.empty()) {
    r = make_result("edac.corrected", Status::error, cannot_read);
  } else {
    r = make_result("edac.corrected", Status::ok,
                    "corrected memory errors within " + std::to_string(*config.max_corrected_rise) + " per controller in " +
                        window_s + " s; " + since);
  }
  r.detail = {{"window_s", config.corrected_window.count()},
              {"max_corrected_rise", opt(config.max_corrected_rise)},
              {"total", total},
              {"over", over_detail},
              {"controllers", controllers},
              {"errors", problems}};
  return r;
}

}  // namespace

std::vector<CheckResult> judge_edac(const EdacSnapshot& snap, const EdacConfig& config, EdacRiseWindow& window,
                                    EdacRiseWindow::Clock::time_point now) {
  return {judge_uncorrected(snap, config), judge_corrected(snap, config, window, now)};
}

EdacCheck::EdacCheck(const EdacConfig& config, std::filesystem::path host_root)
    : config_(config), host_root_(std::move(host_root)), window_(config.corrected_window) {}

std::vector<CheckResult> EdacCheck::run_at(Clock::time_point now) {
  return judge_edac(read_edac_sysfs(host_root_), config_, window_, now);
}

CheckKind edac_check_kind() {
  return single_check_kind<EdacConfig>(edac_section(), [](const EdacConfig& c, BuildContext& context) -> std::shared_ptr<Check> {
    if (!c.enabled) return nullptr;
    return std::make_shared<EdacCheck>(c, context.host_root);
  });
}

}  // namespace ar::healthd
