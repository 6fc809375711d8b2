// What a check read of one device, typed: the per-device series of the metrics (docs/metrics.md)
// come from these, whichever check filled them, and no one reads a check's JSON `detail` back for
// them. They are for showing only: what the node calls for is each result's status, code and remedy.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vocabulary/status.hpp"

namespace ar::healthd {

// One GPU, with its health over every check that names it (the GPU kind's inventory fills these).
struct GpuReading {
  unsigned index = 0;                // NVML's index on this node
  std::string uuid;                  // "GPU-..."
  std::string bus_id;                // NVML's "00000000:18:00.0"
  std::string model;                 // "NVIDIA H100 80GB HBM3"
  Status health = Status::ok;        // the worst any check says of this GPU
  unsigned last_xid = 0;             // the newest XID held for it (0: none; no XID is 0)
  bool operator==(const GpuReading&) const = default;
};

// What one GPU is doing, as the GPU check read it: which processes hold it and how busy it is. What
// a stalled job's ranks are judged by (engine/rank_evidence.hpp): a GPU a task holds at 0% while the
// job's other GPUs here are busy.
struct GpuActivity {
  unsigned index = 0;
  std::string bus_id;
  std::optional<unsigned> utilization_pct;  // none: NVML could not tell
  std::vector<unsigned> pids;               // the processes with a context on it
  bool operator==(const GpuActivity&) const = default;
};

// One EFA port whose state could be read (one that could not is not a reading: the check says error).
struct EfaPortReading {
  std::string device;  // "rdmap16s27"
  std::string port;    // "1"
  bool active = false;
  bool operator==(const EfaPortReading&) const = default;
};

// One Neuron device as one check judges it (health components, error counters): the metrics show a
// device healthy only when every reading of it is.
struct NeuronReading {
  std::string device;  // "neuron3"
  bool healthy = true;
  bool operator==(const NeuronReading&) const = default;
};

// What one check (or an inventory, or a whole sweep) read, kind by kind. A list per kind, not a list
// of variants: each reader takes the kind it shows, and nothing is a case to get wrong.
struct DeviceReadings {
  std::vector<GpuReading> gpus = {};
  std::vector<EfaPortReading> efa_ports = {};
  std::vector<NeuronReading> neuron_devices = {};

  void add(const DeviceReadings& more) {
    gpus.insert(gpus.end(), more.gpus.begin(), more.gpus.end());
    efa_ports.insert(efa_ports.end(), more.efa_ports.begin(), more.efa_ports.end());
    neuron_devices.insert(neuron_devices.end(), more.neuron_devices.begin(), more.neuron_devices.end());
  }
  bool empty() const { return gpus.empty() && efa_ports.empty() && neuron_devices.empty(); }
  bool operator==(const DeviceReadings&) const = default;
};

// The XIDs one GPU has had, as the XID check holds them: counted once each by the metrics, whatever
// number of sweeps show them.
struct XidTally {
  unsigned xid = 0;
  std::string gpu;  // the PCI address as the event named it ("0000:28:00")
  std::uint64_t count = 0;
  std::chrono::system_clock::time_point last;
  bool operator==(const XidTally&) const = default;
};

}  // namespace ar::healthd
