#include "gpu_check.hpp"

#include "checks/gpu/gpu_config.hpp"
#include "checks/gpu/gpu_inventory.hpp"
#include "collectors/host_path.hpp"

#include <spdlog/spdlog.h>

namespace ar::healthd {

GpuCheck::GpuCheck(std::string library_path, GpuThresholds thresholds, std::chrono::milliseconds deadline,
                   std::shared_ptr<XidCheck> xids)
    : collector_(std::make_shared<NvmlCollector>(std::move(library_path))),
      thresholds_(thresholds),
      deadline_(deadline),
      xids_(std::move(xids)) {}

GpuCheck::~GpuCheck() {
  // A future from std::async waits for its thread when destroyed; a hung one never returns.
  if (hung_) (void)new std::shared_future<GpuFleetSnapshot>(*hung_);
}

std::vector<CheckResult> GpuCheck::not_answering(std::chrono::steady_clock::duration blocked) {
  CheckResult r;
  r.check = "gpu.nvml";
  r.status = Status::fault;
  r.action = Remedy::drain;
  r.code = "GPU-NVML-HANG";
  auto call = collector_->current_call();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(blocked).count();
  r.message = "NVML not answering: " + (call.empty() ? std::string("a call") : call) + " blocked for " +
              (secs > 0 ? std::to_string(secs) + " s" : std::to_string(deadline_.count()) + " ms");
  r.at = std::chrono::system_clock::now();
  r.detail = {{"call", call}, {"deadline_ms", deadline_.count()}};
  return {r};
}

std::vector<CheckResult> GpuCheck::run() {
  if (hung_) {
    if (hung_->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return not_answering(std::chrono::steady_clock::now() - hung_since_);
    spdlog::info("gpu: NVML answers again");
    hung_.reset();
  }
  auto collector = collector_;
  std::shared_future<GpuFleetSnapshot> f =
      std::async(std::launch::async, [collector] { return collector->collect(); }).share();
  if (f.wait_for(deadline_) != std::future_status::ready) {
    hung_ = f;
    hung_since_ = std::chrono::steady_clock::now() - deadline_;
    collector_->abandon();  // never unload the library under the stuck call
    auto r = not_answering(deadline_);
    spdlog::error("gpu: {}", r.front().message);
    return r;
  }
  const GpuFleetSnapshot fleet = f.get();

  if (xids_) {
    std::map<std::string, std::string> labels;
    for (const auto& g : fleet.gpus)
      if (!g.bus_id.empty()) labels[short_pci_address(g.bus_id)] = gpu_label(g);
    xids_->set_gpu_labels(std::move(labels));
  }

  std::vector<CheckResult> results{judge_gpu_nvml(fleet), judge_gpu_count(fleet, thresholds_)};
  for (const auto& g : fleet.gpus)
    results.front().gpu_activity.push_back(
        GpuActivity{g.index, g.bus_id, g.utilization_pct, g.processes.value_or(std::vector<unsigned>{})});
  if (fleet.nvml_loaded && fleet.load_error.empty()) {
    results.push_back(judge_gpu_memory(fleet, thresholds_));
    results.push_back(judge_gpu_clocks(fleet, thresholds_));
    results.push_back(judge_gpu_pcie(fleet, thresholds_));
    results.push_back(judge_gpu_nvlink(fleet, previous_ ? &*previous_ : nullptr, thresholds_));
    results.push_back(judge_gpu_recovery(fleet));
    results.push_back(judge_gpu_temperature(fleet, thresholds_));
    if (thresholds_.persistence_required || thresholds_.power_check) results.push_back(judge_gpu_power(fleet, thresholds_));
    previous_ = fleet;
  }
  return results;
}

CheckKind gpu_check_kind() {
  auto kind = check_kind<GpuConfig>(gpu_section(), [](const GpuConfig& c, BuildContext& context) {
    std::vector<std::shared_ptr<Check>> checks;
    if (!c.enabled) return checks;
    auto policy = XidPolicy::defaults();
    policy.set_unknown(c.xid_unknown);
    for (const auto& [xid, rule] : c.xid_rules) policy.set(xid, rule);
    auto xids = std::make_shared<XidCheck>(policy, c.xid_hold, context.state_dir / "gpu_xid.json",
                                           under_root(context.host_root, c.boot_id));
    if (c.events) xids->watch_nvml_events(c.library);
    context.kernel_line_taps->push_back([xids](const KernelRecord& record) { return xids->take_kernel_log_record(record); });
    // The GPU check first: its snapshot names each GPU (index, bus id, UUID) for the XID check, which
    // judges after it in the same sweep; the other way round, the first sweep after a restart drained
    // with "XID 79 on 0000:17:00" and no GPU named.
    checks.push_back(std::make_shared<GpuCheck>(c.library, c.thresholds, c.deadline, xids));
    checks.push_back(xids);
    return checks;
  });
  kind.inventory = DeviceInventory{"gpus", [](const std::vector<CheckResult>& results) { return gpu_inventory(results); }};
  return kind;
}

}  // namespace ar::healthd
