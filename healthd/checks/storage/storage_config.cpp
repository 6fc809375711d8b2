#include "storage_config.hpp"

#include "config/fields.hpp"

namespace ar::healthd {
namespace {

// A directory below a mount, as plain names ("healthd/probe"): the probe walks it name by name
// without following links, so there is nothing to resolve ("..", ".", "//", a leading "/").
Parsed<std::filesystem::path> read_probe_dir(const toml::node& n) {
  const std::string what = "must be a relative path of plain names below the mount (\"healthd\", \"a/b\")";
  if (!n.is_string()) return std::unexpected(what);
  const auto text = *n.value<std::string>();
  if (text.empty() || text.find('\0') != std::string::npos) return std::unexpected(what);
  std::filesystem::path dir;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find('/', start), text.size());
    const auto name = text.substr(start, end - start);
    if (name.empty() || name == "." || name == "..") return std::unexpected(what);
    dir /= name;
    start = end + 1;
  }
  return dir;
}

const KeyTable<StorageMountConfig>& mount_keys() {
  static const auto keys =
      KeyTable<StorageMountConfig>()
          .field("path", &StorageMountConfig::path, read_abs_path)
          .field("fstype", &StorageMountConfig::fstype, read_string)
          .field("min_free_gib", &StorageMountConfig::min_free_gib, read_non_negative)
          .field("min_free_percent", &StorageMountConfig::min_free_percent, read_non_negative)
          .field("min_free_inodes_percent", &StorageMountConfig::min_free_inodes_percent, read_non_negative)
          .field("probe", &StorageMountConfig::probe, read_bool)
          .field("probe_dir", &StorageMountConfig::probe_dir, read_probe_dir)
          .field("action", &StorageMountConfig::action, read_node_remedy);
  return keys;
}

Parsed<void> read_mounts(const toml::node& n, StorageConfig& c, const std::string& source) {
  auto mounts = read_table_array<StorageMountConfig>(n, "checks.storage.mount", source, mount_keys(),
                                                     [](const StorageMountConfig& m) -> Parsed<void> {
                                                       if (m.path.empty()) return std::unexpected(std::string("[[checks.storage.mount]] needs a path"));
                                                       if (m.min_free_percent > 100 || m.min_free_inodes_percent > 100)
                                                         return std::unexpected(std::string("[[checks.storage.mount]] percentages must be between 0 and 100"));
                                                       return {};
                                                     });
  if (!mounts) return std::unexpected(mounts.error());
  c.mounts = *mounts;
  return {};
}

}  // namespace

CheckSection storage_section() {
  return check_section(KeyTable<StorageConfig>()
                           .field("interval_s", &StorageConfig::interval, seconds_in(1, 24 * 3600))
                           .field("probe_timeout_s", &StorageConfig::probe_timeout, seconds_in(1, 600))
                           .nested("mount", read_mounts, [](const StorageConfig& c) { return table_array_text(c.mounts, mount_keys()); }));
}

}  // namespace ar::healthd
