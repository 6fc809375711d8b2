// The deep GPU check: NVIDIA DCGM's diagnostic (`dcgmi diag -r LEVEL -j`), parsed as JSON. It loads
// the GPUs for seconds (level 1) to many minutes (level 3+), so it runs only on an idle node (no job
// here), at most once per interval, or when an admin asks (`healthctl check --now`); between runs its
// last verdict stands. A missing dcgmi, a crash or a time-out is a broken check, never a node fault.
#pragma once

#include <atomic>
#include <chrono>
#include <expected>
#include <vector>
#include <memory>
#include <optional>
#include <string>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "checks/dcgm/dcgm_config.hpp"

namespace ar::healthd {

// Reads the JSON of `dcgmi diag -j` (DCGM 3 and 4 layouts): every test result whose status is Fail
// or Warn, by test name, GPU ids and the message DCGM gives.
struct DcgmFinding {
  std::string test;
  std::string gpus;
  std::string status;   // "Fail" or "Warn"
  std::string message;
};
std::expected<std::vector<DcgmFinding>, std::string> parse_dcgm_diag(const std::string& json);

class DcgmCheck : public Check {
 public:
  // `jobs_here`: how many jobs run on the node now (kept by the daemon); the diagnostic waits for 0.
  DcgmCheck(DcgmConfig config, std::shared_ptr<const std::atomic<std::size_t>> jobs_here);

  std::string name() const override { return "gpu.dcgm"; }
  std::vector<CheckResult> run() override;
  // Looked at every minute; the diagnostic itself runs far less often (see above).
  CheckSchedule schedule() const override {
    return {std::chrono::seconds(60), std::chrono::duration_cast<std::chrono::milliseconds>(config_.timeout) + std::chrono::seconds(5)};
  }
  void requested_on_demand() override { on_demand_ = true; }

 private:
  CheckResult diagnose();

  DcgmConfig config_;
  std::shared_ptr<const std::atomic<std::size_t>> jobs_here_;
  std::atomic<bool> on_demand_{false};
  std::optional<CheckResult> last_;
  std::chrono::steady_clock::time_point last_run_{};
};

// [checks.dcgm]: the DCGM diagnostic: its section and factory, for the registry.
CheckKind dcgm_check_kind();

}  // namespace ar::healthd
