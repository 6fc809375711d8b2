// The NVIDIA GPU check: one NVML snapshot per sweep, judged area by area (gpu.nvml, gpu.count,
// gpu.memory, gpu.clocks, gpu.pcie, gpu.nvlink, gpu.recovery, gpu.temperature, gpu.power).
//
// NVML calls can hang when a GPU is gone. The snapshot is taken on a thread of its own and waited
// for up to the GPU deadline; past it the verdict is "NVML not answering" (a fault: the node's GPUs
// are in trouble), the stuck thread is left alone, and no new snapshot is started until it returns.
#pragma once

#include <future>
#include <memory>
#include <optional>

#include "checks/check.hpp"
#include "checks/gpu/gpu_judges.hpp"
#include "checks/check_kind.hpp"
#include "checks/gpu/xid_check.hpp"
#include "collectors/nvml/nvml_collector.hpp"

namespace ar::healthd {

class GpuCheck : public Check {
 public:
  GpuCheck(std::string library_path, GpuThresholds thresholds, std::chrono::milliseconds deadline,
           std::shared_ptr<XidCheck> xids = nullptr);
  ~GpuCheck() override;

  std::string name() const override { return "gpu"; }
  std::vector<CheckResult> run() override;
  // The engine's deadline must leave room for the NVML deadline, after which this check answers.
  CheckSchedule schedule() const override { return {std::chrono::milliseconds(0), deadline_ + std::chrono::seconds(2)}; }

 private:
  std::vector<CheckResult> not_answering(std::chrono::steady_clock::duration blocked);

  std::shared_ptr<NvmlCollector> collector_;
  GpuThresholds thresholds_;
  std::chrono::milliseconds deadline_;
  std::shared_ptr<XidCheck> xids_;
  std::optional<std::shared_future<GpuFleetSnapshot>> hung_;
  std::chrono::steady_clock::time_point hung_since_;
  std::optional<GpuFleetSnapshot> previous_;
};

// [checks.gpu]: the NVML snapshot check and the XID check, for the registry.
CheckKind gpu_check_kind();

}  // namespace ar::healthd
