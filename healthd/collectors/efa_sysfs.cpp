#include "efa_sysfs.hpp"

#include <algorithm>
#include <cctype>

#include "collectors/host_path.hpp"
#include "sysfs_read.hpp"
#include "text/text.hpp"

namespace ar::healthd {

namespace {
// "0xefa" and one more hex digit: an EFA generation, known to this healthd or newer.
bool is_efa_family(const std::string& id) {
  return id.size() == 6 && id.starts_with("0xefa") && std::isxdigit(static_cast<unsigned char>(id[5]));
}
}  // namespace

std::string port_state_name(const std::string& raw) {
  auto colon = raw.find(':');
  std::string name = colon == std::string::npos ? raw : raw.substr(colon + 1);
  auto b = name.find_first_not_of(' ');
  return b == std::string::npos ? std::string() : name.substr(b);
}

EfaSnapshot read_efa_sysfs(const std::filesystem::path& host_root, const std::vector<std::string>& counters) {
  EfaSnapshot snap;
  const auto root = under_root(host_root, "/sys/class/infiniband");
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    auto vendor = read_trimmed(it->path() / "device/vendor");
    if (!vendor || *vendor != kEfaVendorId) continue;
    EfaDevice dev;
    dev.name = it->path().filename().string();
    auto id = read_trimmed(it->path() / "device/device");
    dev.device_id = id ? sanitize(*id, 16) : std::string();
    dev.known_id = std::ranges::find(kEfaDeviceIds, dev.device_id) != std::end(kEfaDeviceIds);
    if (!dev.known_id && !is_efa_family(dev.device_id)) {
      snap.ignored.push_back(sanitize(dev.name, 64) + " (" + kEfaVendorId + ":" + (id ? dev.device_id : "device id unreadable") + ")");
      continue;
    }
    for (const auto& name : counters)
      if (auto v = read_u64(it->path() / "hw_counters" / name); v) dev.counters[name] = *v;
    std::error_code pec;
    std::vector<std::filesystem::path> ports;
    for (std::filesystem::directory_iterator p(it->path() / "ports", pec), pend; !pec && p != pend; p.increment(pec))
      ports.push_back(p->path());
    if (pec) dev.error = (it->path() / "ports").string() + ": " + pec.message();
    std::sort(ports.begin(), ports.end());
    for (const auto& p : ports) {
      EfaPort port;
      port.port = p.filename().string();
      auto state = read_trimmed(p / "state");
      if (state) port.state = port_state_name(*state);
      if (!state)
        port.error = state.error();
      else if (port.state.empty())
        // A state file with no state in it (read while being written, in CI's fake tree) says
        // nothing about the port: not a port "is " down, drained for it.
        port.error = (p / "state").string() + ": no state in it";
      for (const auto& name : counters)
        if (auto v = read_u64(p / "hw_counters" / name); v) port.counters[name] = *v;
      dev.ports.push_back(std::move(port));
    }
    if (ports.empty() && dev.error.empty()) dev.error = (it->path() / "ports").string() + ": no port";
    snap.devices.push_back(std::move(dev));
  }
  std::sort(snap.devices.begin(), snap.devices.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::sort(snap.ignored.begin(), snap.ignored.end());
  if (!snap.devices.empty()) snap.driver = read_module_version(host_root, "efa");
  return snap;
}

}  // namespace ar::healthd
