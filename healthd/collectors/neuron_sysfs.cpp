#include "neuron_sysfs.hpp"

#include <algorithm>

#include "collectors/host_path.hpp"
#include "neuron_layout.hpp"
#include "sysfs_read.hpp"
#include "text/text.hpp"

namespace ar::healthd {

namespace fs = std::filesystem;

std::vector<std::string> split_components(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(sanitize(cur, 64));
    cur.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')
      flush();
    else if (out.size() < 64)
      cur += c;
  }
  flush();
  return out;
}

namespace {

// Directories that hold nothing about device health and many entries: per-core memory breakdowns, the
// runtime's per-core return-code and activity counters (status, other_info, tensor_engine: 30-odd
// total/present pairs per core, which made the walk of 16 Trainium2 devices cost 45 ms a sweep
// instead of 2), the kernel's generic power management files.
bool skipped_subtree(const std::string& name) {
  return name == "memory_usage" || name == "power" || name == "status" || name == "other_info" || name == "tensor_engine";
}

std::string scope_of(const std::string& device, const fs::path& rel) {
  auto first = rel.begin();
  if (first != rel.end() && first->string().starts_with("neuron_core") && std::next(first) != rel.end())
    return device + "/" + first->string();
  return device;
}

void read_health_status(const fs::path& dir, const fs::path& rel, NeuronDevice& dev) {
  auto& h = dev.health;
  // More than one (a moved copy beside the old one): the first in path order, whatever order the
  // directory walk met them in.
  if (!h.path.empty() && h.path <= rel.generic_string()) return;
  h = NeuronHealthStatus{};
  h.path = rel.generic_string();
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end && files.size() < 64; it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const auto name = f.filename().string();
    auto text = read_trimmed(f);
    if (name == "unhealthy_components") {
      if (text)
        h.unhealthy_components = split_components(*text);
      else
        dev.errors.push_back(text.error());
    } else if (name == "healthcheck_heartbeat") {
      if (auto v = read_u64(f); v) h.heartbeat = *v;
      else h.other[name] = text ? sanitize(*text, 128) : text.error();
    } else if (find_neuron_counter(name) != nullptr) {
      if (auto v = read_u64(f); v) dev.counters.push_back({dev.name, name, (rel / name).generic_string(), *v});
      else dev.errors.push_back(v.error());
    } else {
      h.other[name] = text ? sanitize(*text, 128) : sanitize(text.error(), 256);
    }
  }
}

// A counter at `path`: a plain file with one number, or a counter directory read from its `total`.
void read_counter(const fs::path& path, const fs::path& rel, bool known, NeuronDevice& dev) {
  std::error_code ec;
  const auto file = fs::is_directory(path, ec) ? path / "total" : path;
  auto v = read_u64(file);
  if (v)
    dev.counters.push_back({scope_of(dev.name, rel), path.filename().string(), rel.generic_string(), *v});
  else if (known)  // an unknown file that is not a number is not ours to read
    dev.errors.push_back(v.error());
}

void read_device(const fs::path& dir, NeuronDevice& dev) {
  if (auto n = read_trimmed(dir / "info/architecture/device_name"); n) dev.device_name = sanitize(*n, 64);
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  std::size_t seen = 0;
  for (; !ec && it != end; it.increment(ec)) {
    if (++seen > kNeuronMaxEntries) {
      dev.errors.push_back(dir.string() + ": more than " + std::to_string(kNeuronMaxEntries) + " entries; stopped reading");
      break;
    }
    const auto& entry = *it;
    std::error_code sec;
    if (entry.is_symlink(sec)) continue;  // sysfs links back up the tree (subsystem, device)
    const auto name = entry.path().filename().string();
    const auto rel = entry.path().lexically_relative(dir);
    const bool is_dir = entry.is_directory(sec);
    const bool known = find_neuron_counter(name) != nullptr;
    const bool in_hardware = entry.path().parent_path().filename() == "hardware";
    if (is_dir && name == "health_status") {
      read_health_status(entry.path(), rel, dev);
      it.disable_recursion_pending();
    } else if (is_dir && (skipped_subtree(name) || it.depth() + 1 >= kNeuronMaxDepth)) {
      it.disable_recursion_pending();
    } else if (known || (in_hardware && !is_dir) || (in_hardware && fs::exists(entry.path() / "total", sec))) {
      read_counter(entry.path(), rel, known, dev);
      if (is_dir) it.disable_recursion_pending();
    }
  }
  if (ec) dev.errors.push_back(dir.string() + ": " + ec.message());
  std::sort(dev.counters.begin(), dev.counters.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
}

}  // namespace

NeuronSnapshot read_neuron_sysfs(const fs::path& host_root) {
  NeuronSnapshot snap;
  const auto base = under_root(host_root, "/sys/devices/virtual/neuron_device");
  std::error_code ec;
  snap.sysfs_present = fs::is_directory(base, ec);
  snap.driver = read_module_version(host_root, "neuron");
  for (const auto& d : numbered_entries(base, "neuron")) {
    NeuronDevice dev;
    dev.name = d.filename().string();
    read_device(d, dev);
    snap.devices.push_back(std::move(dev));
  }
  snap.dev_nodes = static_cast<std::uint32_t>(numbered_entries(under_root(host_root, "/dev"), "neuron").size());
  return snap;
}

}  // namespace ar::healthd
