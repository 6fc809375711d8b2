// EC2 notices that the instance will go away or restart: scheduled maintenance events (reboot,
// retirement, stop) and spot interruption notices, read from IMDSv2. A notice is a fault announced
// ahead of time: its result asks the responder to have the auto-resume jobs here checkpoint first
// (CheckpointFirst), then drain after the grace. IMDS not answering is a broken check, never a fault.
#pragma once

#include <memory>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "collectors/imds_client.hpp"
#include "checks/ec2/ec2_config.hpp"

namespace ar::healthd {

struct Ec2Notice {
  std::string code;     // EC2-SYSTEM-REBOOT, EC2-SPOT-TERMINATE, ...
  std::string message;  // "ec2: <what>: <when>"
};

// /latest/meta-data/events/maintenance/scheduled: a JSON list; active events of the codes that take
// the instance away count (system-reboot, instance-reboot, system-maintenance, instance-retirement,
// instance-stop).
std::expected<std::vector<Ec2Notice>, std::string> parse_maintenance_events(const std::string& json);
// /latest/meta-data/spot/instance-action: {"action": "terminate", "time": "..."}.
std::expected<Ec2Notice, std::string> parse_spot_action(const std::string& json);

// One result per area ("maintenance", "spot"): a notice is a fault with checkpoint_first.
CheckResult judge_ec2_notices(const Ec2Config& config, const std::string& area, const std::vector<Ec2Notice>& notices);

class Ec2Check : public Check {
 public:
  explicit Ec2Check(const Ec2Config& config);

  std::string name() const override { return "ec2"; }
  std::vector<CheckResult> run() override;
  // Two requests per area at most, each bounded by the timeout.
  CheckSchedule schedule() const override {
    return {config_.interval, 4 * config_.timeout + std::chrono::seconds(1)};
  }

 private:
  Ec2Config config_;
  ImdsClient client_;
};

// [checks.ec2]: the EC2 notice check: its section and factory, for the registry.
CheckKind ec2_check_kind();

}  // namespace ar::healthd
