#include "neuron_sysfs.hpp"

#include <algorithm>

#include "config/config.hpp"
#include "sysfs_read.hpp"

namespace ar::healthd {

namespace {
// Reads every counter of one stats/hardware directory.
void read_hardware_dir(const std::filesystem::path& dir, const std::string& scope, NeuronDevice& dev) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  dev.has_hardware_stats = true;
  std::vector<std::filesystem::path> entries;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
  if (ec) {
    dev.errors.push_back(dir.string() + ": " + ec.message());
    return;
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& e : entries) {
    auto file = std::filesystem::is_directory(e, ec) ? e / "total" : e;
    if (auto v = read_u64(file); v)
      dev.counters.push_back({scope, e.filename().string(), *v});
    else
      dev.errors.push_back(v.error());
  }
}
}  // namespace

NeuronSnapshot read_neuron_sysfs(const std::filesystem::path& host_root) {
  NeuronSnapshot snap;
  const auto base = under_root(host_root, "/sys/devices/virtual/neuron_device");
  std::error_code ec;
  snap.sysfs_present = std::filesystem::is_directory(base, ec);
  for (const auto& d : numbered_entries(base, "neuron")) {
    NeuronDevice dev;
    dev.name = d.filename().string();
    read_hardware_dir(d / "stats/hardware", dev.name, dev);
    for (const auto& core : numbered_entries(d, "neuron_core"))
      read_hardware_dir(core / "stats/hardware", dev.name + "/" + core.filename().string(), dev);
    snap.devices.push_back(std::move(dev));
  }
  snap.dev_nodes = static_cast<std::uint32_t>(numbered_entries(under_root(host_root, "/dev"), "neuron").size());
  return snap;
}

}  // namespace ar::healthd
