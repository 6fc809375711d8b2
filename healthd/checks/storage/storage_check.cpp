#include "storage_check.hpp"

#include "collectors/host_path.hpp"

#include <condition_variable>
#include <thread>

#include <fmt/format.h>

namespace ar::healthd {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 100.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

CheckResult judge_mount(const StorageMountConfig& config, const MountObservation& seen) {
  CheckResult r;
  r.check = "storage";
  r.at = std::chrono::system_clock::now();
  const std::string path = config.path.string();
  r.detail = {{"path", path}};
  auto fault = [&](const char* code, std::string cause) {
    r.status = status_for(config.action);
    r.code = code;
    r.message = "storage: " + path + ": " + cause;
    r.action = config.action;
    return r;
  };
  if (!seen.entry) return fault("STORAGE-NOT-MOUNTED", "not mounted");
  r.detail["fstype"] = seen.entry->fstype;
  r.detail["device"] = seen.entry->device;
  if (!config.fstype.empty() && seen.entry->fstype != config.fstype)
    return fault("STORAGE-FSTYPE", "mounted as " + seen.entry->fstype + ", expected " + config.fstype);
  if (seen.not_answering)
    return fault("STORAGE-HUNG", fmt::format("not answering: statvfs/probe still running after {:.1f} s",
                                             static_cast<double>(seen.waited.count()) / 1000.0));
  if (!seen.sample) return fault("STORAGE-HUNG", "not answering");
  const auto& s = *seen.sample;
  if (!s.statvfs_error.empty()) return fault("STORAGE-UNWRITABLE", s.statvfs_error);
  if (config.probe && seen.entry->read_only()) return fault("STORAGE-UNWRITABLE", "mounted read-only");
  if (!s.probe_error.empty()) return fault("STORAGE-UNWRITABLE", "probe write failed: " + s.probe_error);
  const double free_gib = static_cast<double>(s.free_bytes) / kBytesPerGiB;
  const double free_pct = percent(s.free_bytes, s.total_bytes);
  const double inodes_pct = percent(s.free_inodes, s.total_inodes);
  r.detail["free_gib"] = free_gib;
  r.detail["free_percent"] = free_pct;
  r.detail["free_inodes_percent"] = inodes_pct;
  if (free_gib < config.min_free_gib)
    return fault("STORAGE-FULL", fmt::format("{:.1f} GiB free, below min_free_gib {}", free_gib, config.min_free_gib));
  if (free_pct < config.min_free_percent)
    return fault("STORAGE-FULL", fmt::format("{:.1f}% free, below min_free_percent {}", free_pct, config.min_free_percent));
  // Filesystems without an inode count (total 0) have no inode limit to judge.
  if (s.total_inodes > 0 && inodes_pct < config.min_free_inodes_percent)
    return fault("STORAGE-INODES", fmt::format("{:.1f}% of inodes free, below min_free_inodes_percent {}", inodes_pct,
                                               config.min_free_inodes_percent));
  return r;
}

StorageCheck::StorageCheck(StorageConfig config, std::filesystem::path host_root, const std::string& node,
                           Sampler sampler)
    : config_(std::move(config)),
      host_root_(std::move(host_root)),
      probe_prefix_(probe_prefix(node)),  // one node's files: a shared filesystem is probed by every node
      sampler_(sampler ? std::move(sampler) : Sampler(sample_filesystem)) {}

std::optional<std::chrono::milliseconds> StorageCheck::stuck_for(const std::filesystem::path& mount,
                                                                 std::chrono::steady_clock::time_point now) {
  auto it = stuck_.find(mount);
  if (it == stuck_.end()) return std::nullopt;
  {
    std::lock_guard lock(it->second->mutex);
    if (!it->second->done) return std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second->started);
  }
  // Answered at last. Erased only once the guard has let go of its mutex: the map may hold the last
  // reference to the Sampling, and unlocking a freed mutex writes freed memory.
  stuck_.erase(it);
  return std::nullopt;
}

void StorageCheck::start_sampling(const StorageMountConfig& mount, const std::shared_ptr<Sampling>& s) {
  ProbeOptions probe{.enabled = mount.probe,
                     .dir = mount.probe_dir,
                     .prefix = probe_prefix_,
                     .remove_stale = !stale_removed_.contains(mount.path)};
  std::thread([s, sampler = sampler_, dir = under_root(host_root_, mount.path), probe = std::move(probe)] {
    auto sample = sampler(dir, probe);
    std::lock_guard lock(s->mutex);
    s->sample = std::move(sample);
    s->done = true;
    s->done_cv.notify_all();
  }).detach();
}

std::vector<CheckResult> StorageCheck::run() {
  const auto mounts_file = under_root(host_root_, "/proc/mounts");
  auto table = read_mount_table(mounts_file);
  if (!table) {
    CheckResult r;
    r.check = name();
    r.status = Status::error;
    r.code = "CHECK-BROKEN";
    r.message = "storage: mount table: " + table.error();
    r.at = std::chrono::system_clock::now();
    return {r};
  }
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = now + config_.probe_timeout;
  std::vector<MountObservation> seen(config_.mounts.size());
  std::vector<std::shared_ptr<Sampling>> sampling(config_.mounts.size());
  // Start every mount's sampling first, so one hung mount does not eat the others' time.
  for (std::size_t i = 0; i < config_.mounts.size(); ++i) {
    const auto& m = config_.mounts[i];
    seen[i].entry = find_mount(*table, m.path);
    if (!seen[i].entry || (!m.fstype.empty() && seen[i].entry->fstype != m.fstype)) continue;
    if (auto waited = stuck_for(m.path, now)) {
      seen[i].not_answering = true;  // still stuck since an earlier run: never a second one
      seen[i].waited = *waited;
      continue;
    }
    sampling[i] = std::make_shared<Sampling>();
    sampling[i]->started = now;
    start_sampling(m, sampling[i]);
  }
  std::vector<CheckResult> results;
  for (std::size_t i = 0; i < config_.mounts.size(); ++i) {
    if (auto& s = sampling[i]) {
      std::unique_lock lock(s->mutex);
      if (s->done_cv.wait_until(lock, deadline, [&] { return s->done; })) {
        seen[i].sample = s->sample;
        // Leftovers are looked for once per mount, by the first probe that answers: a readdir of a
        // big shared directory in every sweep (say, of a full filesystem) would cost the filesystem.
        if (s->sample.probed) stale_removed_.insert(config_.mounts[i].path);
      } else {
        seen[i].not_answering = true;
        seen[i].waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - now);
        stuck_[config_.mounts[i].path] = s;
      }
    }
    results.push_back(judge_mount(config_.mounts[i], seen[i]));
  }
  if (results.empty()) {
    CheckResult r;
    r.check = name();
    r.message = "storage: no mount configured";
    r.at = std::chrono::system_clock::now();
    results.push_back(r);
  }
  return results;
}

CheckKind storage_check_kind() {
  return single_check_kind<StorageConfig>(storage_section(), [](const StorageConfig& c, BuildContext& context) -> std::shared_ptr<Check> {
    if (c.mounts.empty()) return nullptr;  // enabled by its mounts
    return std::make_shared<StorageCheck>(c, context.host_root, context.node_name);
  });
}

}  // namespace ar::healthd
