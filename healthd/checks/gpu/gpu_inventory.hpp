// The node's GPUs as one list, each with its health: what `healthctl status` shows and what the
// metrics export per GPU (healthd_gpu_health). Built from the last results of the GPU checks, never
// from NVML: the gpu.* results carry every GPU's figures and its own verdict in detail.gpus (see
// gpu_judges.cpp), the gpu_xid result its events in detail.events.
//
// One entry per GPU, by index:
//   {"index":0, "bus_id":"00000000:18:00.0", "uuid":"GPU-...", "name":"NVIDIA H100 80GB HBM3",
//    "health":"ok|warn|fault|error",       worst over the results that name this GPU as a problem
//    "problems":[{"check":"gpu.memory", "code":"GPU-ECC-UNCORRECTED", "message":"..."}],
//    "ecc_uncorrected":int|null, "ecc_corrected":int|null,           volatile, from gpu.memory
//    "remap":{"corrected":0,"uncorrected":0,"pending":false,"failure":false}|null,
//    "xid":{"xid":79, "at_ms":..., "count":2}|null}                   its newest XID, from gpu_xid
// An XID counts as a problem of its GPU (matched by PCI address) as the XID check judges it: a fault
// once its rule's threshold is met, a warning below it.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "checks/check.hpp"

namespace ar::healthd {

// The list as the status shows it (`listed`), and each GPU typed for the metrics (`readings`).
DeviceList gpu_inventory(const std::vector<CheckResult>& results);

// The same over results as JSON (CheckResult::to_json(), as Engine::status() holds them under
// "checks"). Shapes it does not expect are skipped, never thrown on.
nlohmann::json gpu_inventory_of(const nlohmann::json& results);

}  // namespace ar::healthd
