// EC2 instance-metadata replies (healthd/checks/ec2_check: parse_maintenance_events,
// parse_spot_action, then judge_ec2_notices), as ImdsClient hands over a reply body. Properties:
// never a crash; the notices a reply yields can be judged and the result reported.
#include "checks/ec2/ec2_check.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ar::healthd;
  ar::fuzz::quiet_logs();
  const std::string body(ar::fuzz::as_text(data, size));
  static const Ec2Config config;
  std::vector<Ec2Notice> notices;
  if (auto events = parse_maintenance_events(body)) notices = *events;
  (void)judge_ec2_notices(config, "maintenance", notices).to_json().dump();
  if (auto spot = parse_spot_action(body)) (void)judge_ec2_notices(config, "spot", {*spot}).to_json().dump();
  return 0;
}
