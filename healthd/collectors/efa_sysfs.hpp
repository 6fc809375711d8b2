// What the EFA devices of a host look like in sysfs, read into plain values (no judging here).
//
// Layout (Linux RDMA core; the efa driver, amzn-drivers kernel/linux/efa, efa_main.c and efa_verbs.c):
//   /sys/class/infiniband/<dev>/device/vendor        "0x1d0f" (Amazon)
//   /sys/class/infiniband/<dev>/device/device        "0xefa0" .. "0xefa3": the EFA PCI device ids
//                                                    (efa_pci_tbl); another 0xefaN is taken for a
//                                                    newer EFA generation and noted as such
//   /sys/class/infiniband/<dev>/hw_counters/<name>   device counters (efa_device_stats_descs:
//                                                    submitted_cmds, completed_cmds, cmds_err,
//                                                    no_completion_cmds, keep_alive_rcvd, *_err)
//   /sys/class/infiniband/<dev>/ports/<n>/state      "4: ACTIVE", "1: DOWN", ...
//   /sys/class/infiniband/<dev>/ports/<n>/hw_counters/<name>   port counters (efa_port_stats_descs);
//                                                    retrans_*, unresponsive_remote_events and
//                                                    impaired_remote_conn_events only from efa r2.17
//                                                    ("Add Network HW statistics counters")
//   /sys/module/efa/version                          the driver's version, where it has one ("2.17.3g")
// Other RDMA devices (mlx5, rxe...) under the same class are ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "driver_version.hpp"

namespace ar::healthd {

inline constexpr const char* kEfaVendorId = "0x1d0f";
// The PCI device ids the efa driver binds (efa_pci_tbl in efa_main.c).
inline constexpr const char* kEfaDeviceIds[] = {"0xefa0", "0xefa1", "0xefa2", "0xefa3"};

struct EfaPort {
  std::string port;                               // "1"
  std::string state;                              // the state name: "ACTIVE", "DOWN"; empty when unreadable
  std::string error;                              // why the state could not be read
  std::map<std::string, std::uint64_t> counters;  // the wanted hw_counters this port has
};

struct EfaDevice {
  std::string name;       // "rdmap16s27"
  std::string device_id;  // "0xefa1"
  bool known_id = true;   // one of kEfaDeviceIds (false: another 0xefaN, a newer generation)
  std::map<std::string, std::uint64_t> counters;  // the wanted device-level hw_counters it has
  std::vector<EfaPort> ports;
  std::string error;  // the device's ports could not be listed
};

struct EfaSnapshot {
  std::vector<EfaDevice> devices;  // EFA devices only, sorted by name
  // Amazon RDMA devices whose PCI device id is not an EFA one: "rdmap1s0 (0x1d0f:0x1234)".
  std::vector<std::string> ignored;
  std::optional<DriverVersion> driver;  // /sys/module/efa/version, read only when there is an EFA device
};

// Reads every EFA device under /sys/class/infiniband of `host_root` (which may be "/") with the
// hw_counters named in `counters`, at device level and per port (absent counter files are skipped: not
// every driver has every counter). A missing class directory means no RDMA device at all: an empty
// snapshot, not an error.
EfaSnapshot read_efa_sysfs(const std::filesystem::path& host_root, const std::vector<std::string>& counters);

// "4: ACTIVE" -> "ACTIVE"; a bare name is returned as it is.
std::string port_state_name(const std::string& raw);

}  // namespace ar::healthd
