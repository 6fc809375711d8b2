// What healthd knows about the node's NVIDIA GPUs at one moment: gathered by the NVML collector,
// judged by the GPU checks (which never call NVML themselves, so they are tested by handing them data).
// A field that the driver does not support, or whose entry point is missing, is left empty: "unknown"
// is never read as "healthy" or "broken", and the check that needs it says it could not look.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ar::healthd {

struct NvLinkSnapshot {
  unsigned index = 0;
  bool active = false;
  // Cumulative error counters (replay, recovery, CRC flit, CRC data, ECC data); empty when unsupported.
  std::optional<std::uint64_t> replay, recovery, crc_flit, crc_data, ecc_data;
};

struct GpuSnapshot {
  unsigned index = 0;
  std::string name;     // "NVIDIA H100 80GB HBM3"
  std::string uuid;     // "GPU-..."
  std::string bus_id;   // "00000000:18:00.0", as NVML gives it
  // Set when NVML answered for the device but said it is lost or needs a reset.
  std::optional<std::string> lost;

  // Memory
  std::optional<std::uint64_t> ecc_uncorrected_volatile;
  std::optional<std::uint64_t> ecc_corrected_volatile;
  std::optional<unsigned> retired_pages_sbe, retired_pages_dbe;
  std::optional<bool> retired_pages_pending;
  struct RowRemap {
    unsigned corrected = 0, uncorrected = 0;
    bool pending = false, failure = false;
  };
  std::optional<RowRemap> row_remap;

  // Clocks, PCIe, thermal, power
  std::optional<std::uint64_t> clock_event_reasons;  // nvmlClocksEventReason* bit mask
  std::optional<unsigned> pcie_gen, pcie_max_gen, pcie_width, pcie_max_width;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> utilization_pct;  // a kernel ran this share of NVML's last sample period
  std::optional<unsigned> power_mw, power_limit_mw;
  std::optional<bool> persistence_mode;

  // The processes using the GPU (compute and graphics contexts), by pid, sorted: a GPU reset is refused
  // while there is any. Empty optional: could not look (entry point missing, the query failed, or more
  // processes than healthd reads; `errors` says which when it is worth telling). Pids are as the
  // driver sees them: the host's pid namespace.
  std::optional<std::vector<unsigned>> processes;

  // NVLink: only links the device has (NVML says "not supported" past the last one).
  std::vector<NvLinkSnapshot> nvlinks;
  bool nvlink_supported = false;

  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (driver 570+): the driver's own verdict.
  std::optional<unsigned> recovery_action;

  // Per-field query errors worth telling ("nvmlDeviceGetRemappedRows: Not Supported" is not listed).
  std::map<std::string, std::string> errors;
};

// An NVML entry point this driver's library lacks, and the area of the checks it disables.
struct MissingEntryPoint {
  std::string symbol;    // "nvmlDeviceGetRemappedRows"
  std::string disables;  // "row remapping"
  std::string text() const { return symbol + " (" + disables + ")"; }
};

struct GpuFleetSnapshot {
  bool nvml_loaded = false;         // the library was found and nvmlInit succeeded
  std::string load_error;           // why not, when it was not
  std::string driver_version;
  std::optional<unsigned> device_count;  // what nvmlDeviceGetCount said
  std::vector<GpuSnapshot> gpus;
  // Entry points missing from this driver's library, and the checks they disable.
  std::vector<MissingEntryPoint> missing_symbols;
};

// The PCI address in the form the kernel log uses ("0000:18:00"): lower case, 4-digit domain, no
// function. XIDs from NVML and from the kernel log are matched to a GPU by it.
std::string short_pci_address(const std::string& bus_id);

}  // namespace ar::healthd
