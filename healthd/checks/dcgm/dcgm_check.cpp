#include "dcgm_check.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "runtime/process.hpp"
#include "text/text.hpp"

namespace ar::healthd {
namespace {

// dcgmi's output is outside text: each piece kept is sanitized (control characters can sit in JSON
// strings as \u001b) and short, and a message that reaches a Slurm reason is one line.
constexpr std::size_t kMaxField = 200;
constexpr std::size_t kMaxDcgmMessage = 200;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string text_of(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number()) return j.dump();
  if (j.is_array()) {
    std::string s;
    for (const auto& e : j) {
      auto t = text_of(e);
      if (!t.empty()) s += (s.empty() ? "" : "; ") + t;
    }
    return s;
  }
  if (j.is_object()) {
    for (const char* k : {"warning", "message", "msg", "info"})
      if (j.contains(k)) return text_of(j.at(k));
  }
  return {};
}

// Walks the document: a test is an object with a name and a results list (DCGM 3: "tests" inside
// "test_categories"; DCGM 4: "tests" at the top), or a result object carrying its own status.
void walk(const nlohmann::json& j, const std::string& test, std::vector<DcgmFinding>& out) {
  if (j.is_array()) {
    for (const auto& e : j) walk(e, test, out);
    return;
  }
  if (!j.is_object()) return;
  std::string name = test;
  for (const char* k : {"name", "test_name"})
    if (j.contains(k) && j.at(k).is_string()) name = j.at(k).get<std::string>();
  if (j.contains("status") && j.at("status").is_string()) {
    auto st = lower(j.at("status").get<std::string>());
    if (st == "fail" || st == "warn") {
      DcgmFinding f;
      f.test = sanitize(name, kMaxField);
      f.status = st == "fail" ? "Fail" : "Warn";
      if (j.contains("gpu_ids")) f.gpus = text_of(j.at("gpu_ids"));
      else if (j.contains("gpu_id")) f.gpus = text_of(j.at("gpu_id"));
      else if (j.contains("entity_id")) f.gpus = text_of(j.at("entity_id"));
      f.gpus = sanitize(f.gpus, kMaxField);
      for (const char* k : {"warnings", "warning", "info", "error"})
        if (j.contains(k) && f.message.empty()) f.message = text_of(j.at(k));
      f.message = sanitize(f.message, kMaxField);
      out.push_back(f);
    }
  }
  for (const auto& [k, v] : j.items())
    if (v.is_object() || v.is_array()) walk(v, name, out);
}

}  // namespace

std::expected<std::vector<DcgmFinding>, std::string> parse_dcgm_diag(const std::string& json) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann quotes the bytes it stopped at, whatever they are.
    return std::unexpected(sanitize(std::string("not JSON: ") + e.what(), kMaxField));
  }
  if (!doc.is_object()) return std::unexpected(std::string("not a JSON object"));
  std::vector<DcgmFinding> out;
  walk(doc, "", out);
  return out;
}

DcgmCheck::DcgmCheck(DcgmConfig config, std::shared_ptr<const std::atomic<std::size_t>> jobs_here)
    : config_(std::move(config)), jobs_here_(std::move(jobs_here)) {}

std::vector<CheckResult> DcgmCheck::run() {
  const bool asked = on_demand_.exchange(false);
  const auto jobs = jobs_here_ ? jobs_here_->load() : 0;
  const bool due = !last_ || asked || std::chrono::steady_clock::now() - last_run_ >= config_.interval;
  if (due && jobs == 0) {
    last_ = diagnose();
    last_run_ = std::chrono::steady_clock::now();
    return {*last_};
  }
  if (last_) return {*last_};
  CheckResult waiting;
  waiting.check = name();
  waiting.at = std::chrono::system_clock::now();
  waiting.message = "not run yet: waits for an idle node (" + std::to_string(jobs) + " job(s) here)";
  return {waiting};
}

CheckResult DcgmCheck::diagnose() {
  CheckResult r;
  r.check = name();
  r.at = std::chrono::system_clock::now();
  const std::string what = "dcgmi diag -r " + std::to_string(config_.level);
  spdlog::info("gpu.dcgm: running {} (time limit {} s)", what, config_.timeout.count());
  auto p = run_process({config_.dcgmi, "diag", "-r", std::to_string(config_.level), "-j"},
                       std::chrono::duration_cast<std::chrono::milliseconds>(config_.timeout), 4 * 1024 * 1024);
  r.status = Status::error;
  r.code = "GPU-DCGM-BROKEN";
  if (!p) {
    r.message = what + ": cannot run " + config_.dcgmi + ": " + p.error();
    return r;
  }
  if (p->timed_out) {
    r.message = what + ": did not finish within " + std::to_string(config_.timeout.count()) + " s";
    return r;
  }
  auto findings = parse_dcgm_diag(p->out);
  if (!findings) {
    auto err = sanitize(std::string_view(p->err).substr(0, p->err.find('\n')), kMaxField);
    r.message = what + ": exit " + std::to_string(p->exit_code) + ", output " + findings.error() +
                (err.empty() ? "" : " (" + err + ")");
    return r;
  }
  nlohmann::json detail = nlohmann::json::array();
  const DcgmFinding* worst = nullptr;
  for (const auto& f : *findings) {
    detail.push_back({{"test", f.test}, {"gpus", f.gpus}, {"status", f.status}, {"message", f.message}});
    if (!worst || (f.status == "Fail" && worst->status != "Fail")) worst = &f;
  }
  r.detail = {{"level", config_.level}, {"findings", detail}, {"exit_code", p->exit_code}};
  r.code.clear();
  if (!worst) {
    r.status = Status::ok;
    r.message = what + ": every test passed";
    return r;
  }
  r.code = "GPU-DCGM-DIAG";
  r.message = what + ": " + worst->test + " " + (worst->status == "Fail" ? "failed" : "warned") +
              (worst->gpus.empty() ? "" : " on GPU " + worst->gpus) + (worst->message.empty() ? "" : ": " + worst->message);
  r.message = truncate_utf8(std::move(r.message), kMaxDcgmMessage);
  if (worst->status == "Fail") {
    r.status = takes_node_out(config_.action) ? Status::fault : Status::warn;
    r.action = config_.action;
  } else {
    r.status = Status::warn;
    r.action = Remedy::warn;
  }
  return r;
}

CheckKind dcgm_check_kind() {
  return single_check_kind<DcgmConfig>(dcgm_section(), [](const DcgmConfig& c, BuildContext& context) -> std::shared_ptr<Check> {
    if (!c.enabled) return nullptr;
    return std::make_shared<DcgmCheck>(c, context.jobs_here);
  });
}

}  // namespace ar::healthd
