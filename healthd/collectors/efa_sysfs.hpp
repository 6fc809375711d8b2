// What the EFA devices of a host look like in sysfs, read into plain values (no judging here).
//
// Layout (Linux RDMA core, efa driver):
//   /sys/class/infiniband/<dev>/device/vendor        "0x1d0f" (Amazon) marks an EFA device
//   /sys/class/infiniband/<dev>/ports/<n>/state      "4: ACTIVE", "1: DOWN", ...
//   /sys/class/infiniband/<dev>/ports/<n>/hw_counters/<name>   one decimal counter per file
// Other RDMA devices (mlx5, rxe...) under the same class are ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ar::healthd {

inline constexpr const char* kEfaVendorId = "0x1d0f";

struct EfaPort {
  std::string port;                               // "1"
  std::string state;                              // the state name: "ACTIVE", "DOWN"; empty when unreadable
  std::string error;                              // why the state could not be read
  std::map<std::string, std::uint64_t> counters;  // the wanted hw_counters this port has
};

struct EfaDevice {
  std::string name;  // "rdmap16s27"
  std::vector<EfaPort> ports;
  std::string error;  // the device's ports could not be listed
};

struct EfaSnapshot {
  std::vector<EfaDevice> devices;  // EFA devices only, sorted by name
};

// Reads every EFA device under `sys_class_infiniband` (host root already applied) with the hw_counters
// named in `counters` (absent counter files are skipped: not every device has every counter). A
// missing class directory means no RDMA device at all: an empty snapshot, not an error.
EfaSnapshot read_efa_sysfs(const std::filesystem::path& sys_class_infiniband, const std::vector<std::string>& counters);

// "4: ACTIVE" -> "ACTIVE"; a bare name is returned as it is.
std::string port_state_name(const std::string& raw);

}  // namespace ar::healthd
