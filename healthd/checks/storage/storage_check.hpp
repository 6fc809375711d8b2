// The filesystems jobs need (the checkpoint directory above all): mounted, with the expected type,
// writable, with free space and inodes. One result per configured mount.
//
// A hung network mount blocks statvfs and writes forever. The sampling of each mount therefore runs
// on a thread of its own; at probe_timeout the mount is judged "not answering" (a fault, not a hang
// of the daemon), and no second sample is started on it while the first is still stuck; once that
// one returns, the next run samples afresh.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "collectors/filesystem.hpp"
#include "checks/storage/storage_config.hpp"

namespace ar::healthd {

// What was seen of one mount, for the pure judgement.
struct MountObservation {
  std::optional<MountEntry> entry;   // nullopt: not in the mount table
  std::optional<FsSample> sample;    // nullopt: not sampled (not mounted, wrong type) or not answering
  bool not_answering = false;        // statvfs/probe still running past the deadline
  std::chrono::milliseconds waited{0};
};

CheckResult judge_mount(const StorageMountConfig& config, const MountObservation& seen);

class StorageCheck : public Check {
 public:
  // Samples one mount directory (statvfs, and the probe when asked). May block; tests inject a fake.
  using Sampler = std::function<FsSample(const std::filesystem::path& mount, const ProbeOptions& probe)>;

  StorageCheck(StorageConfig config, std::filesystem::path host_root, const std::string& node,
               Sampler sampler = {});

  std::string name() const override { return "storage"; }
  std::vector<CheckResult> run() override;
  CheckSchedule schedule() const override {
    return {config_.interval, config_.probe_timeout + std::chrono::seconds(2)};
  }

 private:
  struct Sampling {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    FsSample sample;
    std::chrono::steady_clock::time_point started;
  };

  // How long the mount's earlier sampling has been stuck; nullopt when none is (one that answered
  // at last is forgotten here).
  std::optional<std::chrono::milliseconds> stuck_for(const std::filesystem::path& mount,
                                                     std::chrono::steady_clock::time_point now);
  void start_sampling(const StorageMountConfig& mount, const std::shared_ptr<Sampling>& s);

  StorageConfig config_;
  std::filesystem::path host_root_;
  std::string probe_prefix_;
  Sampler sampler_;
  // By mount path; run() thread only. A sampling thread holds its own reference to its Sampling.
  std::map<std::filesystem::path, std::shared_ptr<Sampling>> stuck_;
  std::set<std::filesystem::path> stale_removed_;  // mounts whose earlier probe leftovers are gone
};

// [checks.storage]: the storage check, enabled by its mounts: its section and factory, for the registry.
CheckKind storage_check_kind();

}  // namespace ar::healthd
