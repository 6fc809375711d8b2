// [checks.storage] and [[checks.storage.mount]]: the filesystems jobs need (see storage_check.hpp).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

// [[checks.storage.mount]]: a filesystem jobs need (the checkpoint directory), judged by its mount
// entry, free space and inodes (statvfs) and, optionally, a probe write.
struct StorageMountConfig {
  std::filesystem::path path;            // the mount point, under the host root
  std::string fstype;                    // expected type ("lustre", "nfs4"...); empty: any
  double min_free_gib = 0;               // 0: not checked
  double min_free_percent = 0;
  double min_free_inodes_percent = 0;
  bool probe = true;                     // write+fsync+unlink a small file, within probe_timeout
  std::filesystem::path probe_dir;       // where, relative to path (plain names); empty: the mount root
  Remedy action = Remedy::drain;         // for every fault of this mount
};

struct StorageConfig : SettingsOf<StorageConfig> {  // enabled when a mount is listed
  static constexpr std::string_view kSection = "storage";
  std::chrono::seconds interval{60};
  std::chrono::seconds probe_timeout{10};  // statvfs+probe past it: the mount is "not answering"
  std::vector<StorageMountConfig> mounts;
};

CheckSection storage_section();

}  // namespace ar::healthd
