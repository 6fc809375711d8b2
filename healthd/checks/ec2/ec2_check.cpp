#include "ec2_check.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

std::string upper_code(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A JSON string may hold control characters (\u001b): sanitized, as all text from IMDS.
std::string field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? sanitize(it->get<std::string>(), 200) : "";
}

}  // namespace

std::expected<std::vector<Ec2Notice>, std::string> parse_maintenance_events(const std::string& json) {
  static const std::vector<std::string> codes = {"system-reboot", "instance-reboot", "system-maintenance",
                                                 "instance-retirement", "instance-stop"};
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return std::unexpected(std::string("maintenance events: not a JSON list"));
  std::vector<Ec2Notice> notices;
  for (const auto& e : j) {
    if (!e.is_object()) return std::unexpected(std::string("maintenance events: an event is not a JSON object"));
    const auto code = field(e, "Code");
    // Completed and canceled events stay listed for a while; only active ones are coming.
    if (field(e, "State") != "active" || std::find(codes.begin(), codes.end(), code) == codes.end()) continue;
    std::string message = "ec2: " + code + " scheduled";
    if (auto d = field(e, "Description"); !d.empty()) message += ": " + d;
    if (auto when = field(e, "NotBefore"); !when.empty()) message += " (not before " + when + ")";
    notices.push_back({"EC2-" + upper_code(code), message});
  }
  return notices;
}

std::expected<Ec2Notice, std::string> parse_spot_action(const std::string& json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::unexpected(std::string("spot instance-action: not a JSON object"));
  auto action = field(j, "action");
  if (action.empty()) return std::unexpected(std::string("spot instance-action: no \"action\""));
  std::string message = "ec2: spot instance-action " + action;
  if (auto t = field(j, "time"); !t.empty()) message += " at " + t;
  return Ec2Notice{"EC2-SPOT-" + upper_code(action), message};
}

CheckResult judge_ec2_notices(const Ec2Config& config, const std::string& area, const std::vector<Ec2Notice>& notices) {
  CheckResult r;
  r.check = "ec2";
  r.at = std::chrono::system_clock::now();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& n : notices) list.push_back({{"code", n.code}, {"message", n.message}});
  r.detail = {{"area", area}, {"notices", list}};
  if (notices.empty()) return r;
  r.code = notices.front().code;
  r.message = notices.front().message;
  r.action = config.action;
  r.status = status_for(config.action);
  if (takes_node_out(config.action)) r.checkpoint_first = CheckpointFirst{config.checkpoint_signal, config.checkpoint_grace};
  return r;
}

Ec2Check::Ec2Check(const Ec2Config& config) : config_(config), client_(config.endpoint, config.timeout) {}

std::vector<CheckResult> Ec2Check::run() {
  auto broken = [&](const std::string& area, const std::string& why, const char* code = "EC2-IMDS-UNREACHABLE") {
    CheckResult r;
    r.check = name();
    r.status = Status::error;
    r.code = code;
    r.message = "ec2: instance metadata not readable, " + area + " notices unseen: " + why;
    r.detail = {{"area", area}, {"endpoint", client_.endpoint()}};
    r.at = std::chrono::system_clock::now();
    return r;
  };
  std::vector<CheckResult> results;
  auto events = client_.get("/latest/meta-data/events/maintenance/scheduled");
  if (!events) {
    // Unreachable for one is unreachable for both: one result, said once.
    return {broken("maintenance and spot", events.error())};
  }
  std::vector<Ec2Notice> maintenance;
  if (*events) {
    auto parsed = parse_maintenance_events(**events);
    if (!parsed) results.push_back(broken("maintenance", parsed.error(), "EC2-IMDS-BAD-ANSWER"));
    else maintenance = *parsed;
  }
  if (results.empty()) results.push_back(judge_ec2_notices(config_, "maintenance", maintenance));

  auto spot = client_.get("/latest/meta-data/spot/instance-action");
  if (!spot) {
    results.push_back(broken("spot", spot.error()));
  } else {
    std::vector<Ec2Notice> notices;
    if (*spot) {  // 404: no interruption coming (or not a spot instance)
      auto parsed = parse_spot_action(**spot);
      if (!parsed) {
        results.push_back(broken("spot", parsed.error(), "EC2-IMDS-BAD-ANSWER"));
        return results;
      }
      notices.push_back(*parsed);
    }
    results.push_back(judge_ec2_notices(config_, "spot", notices));
  }
  return results;
}

CheckKind ec2_check_kind() {
  return single_check_kind<Ec2Config>(ec2_section(), [](const Ec2Config& c, BuildContext&) -> std::shared_ptr<Check> {
    if (!c.enabled) return nullptr;
    return std::make_shared<Ec2Check>(c);
  });
}

}  // namespace ar::healthd
