// A fake NVML: a shared library with the C ABI of the NVML subset healthd uses (nvml_api.hpp), whose
// answers come from a JSON scenario file named by $FAKE_NVML_SCENARIO. Tests point healthd's NVML
// library path at it and rewrite the scenario while the daemon runs; the product has no test mode.
// See README.md next to this file for the scenario format.
//
// Built twice: libfake-nvml.so with every entry point, and libfake-nvml-old.so (FAKE_NVML_OLD_DRIVER)
// without the ones newer drivers added, so the daemon's fallbacks to older names can be tested.
//
// Every entry point catches everything: no exception may cross the C ABI into the daemon.

#include "collectors/nvml/nvml_api.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

// The library is built with hidden visibility, so only the NVML names are exported (and the copy of
// nlohmann_json inside cannot interpose on the host's).
#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

// A device handle is the address of one of these; see g_handles.
struct nvmlDevice_st {
  unsigned index;
};

// An event set remembers, by event id, what it must never deliver: the events that were already in the
// scenario when the set was created (a restarted daemon must not see old faults again) and the ones it
// has delivered.
struct nvmlEventSet_st {
  std::mutex mutex;
  std::map<unsigned, unsigned long long> registered;  // device index -> event type mask
  std::unordered_set<unsigned long long> old_or_delivered;
};

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr unsigned kMaxDevices = 64;
constexpr unsigned kDefaultDevices = 8;
constexpr std::size_t kMaxProcesses = 4096;  // per list and device, to keep a scenario sane
constexpr auto kHangPoll = 50ms;
constexpr auto kEventPoll = 20ms;
constexpr unsigned long long kSupportedEvents = nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError |
                                                nvmlEventTypePState | nvmlEventTypeXidCriticalError;

// Handles live in a static array, so they stay valid across scenario reloads (the daemon keeps them)
// and a handle is recognised by its address.
constexpr std::array<nvmlDevice_st, kMaxDevices> make_handles() {
  std::array<nvmlDevice_st, kMaxDevices> handles{};
  for (unsigned i = 0; i < kMaxDevices; ++i) handles[i].index = i;
  return handles;
}
constinit std::array<nvmlDevice_st, kMaxDevices> g_handles = make_handles();

std::optional<unsigned> index_of(nvmlDevice_t handle) {
  for (unsigned i = 0; i < kMaxDevices; ++i)
    if (&g_handles[i] == handle) return i;
  return std::nullopt;
}

// ---- The scenario ----------------------------------------------------------------------------------

struct Link {
  bool active = true;
  unsigned long long replay = 0, recovery = 0, crc_flit = 0, crc_data = 0, ecc_data = 0;
};

struct Device {
  unsigned index = 0;
  std::string name = "NVIDIA H100 80GB HBM3";
  std::string uuid;
  std::string bus_id;
  bool lost = false;
  unsigned long long volatile_uncorrected = 0, volatile_corrected = 0;
  unsigned long long aggregate_uncorrected = 0, aggregate_corrected = 0;
  unsigned sbe_pages = 0, dbe_pages = 0;
  bool pages_pending = false;
  unsigned remap_corrected = 0, remap_uncorrected = 0;
  bool remap_pending = false, remap_failure = false;
  unsigned long long clock_reasons = 0;
  unsigned pcie_gen = 5, pcie_max_gen = 5, pcie_width = 16, pcie_max_width = 16;
  unsigned temperature = 40, power_mw = 100000, power_limit_mw = 700000;
  unsigned utilization = 0;
  bool persistence = true;
  std::vector<Link> nvlink = std::vector<Link>(NVML_NVLINK_MAX_LINKS);
  unsigned recovery_action = NVML_GPU_RECOVERY_ACTION_NONE;
  std::vector<unsigned> processes, graphics_processes;  // pids with a compute / graphics context
};

struct Event {
  unsigned long long id = 0;
  unsigned gpu = 0;
  unsigned long long type = 0;  // one nvmlEventType* bit
  unsigned long long data = 0;  // the XID for XID events
};

struct Scenario {
  std::string driver_version = "570.86.15";
  nvmlReturn_t init_error = NVML_SUCCESS;
  std::set<std::string, std::less<>> hang;
  std::map<std::string, nvmlReturn_t, std::less<>> fail;
  std::vector<Device> devices;
  std::vector<Event> events;
};

Device default_device(unsigned index) {
  Device d;
  d.index = index;
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-fa4e0000-0000-4000-8000-%012x", index);
  d.uuid = buf;
  // Buses 18, 28, ... 88 as on an 8-GPU board; past eight, the PCI device number tells them apart.
  std::snprintf(buf, sizeof buf, "00000000:%02X:%02X.0", 0x18 + 0x10 * (index % 8), index / 8);
  d.bus_id = buf;
  return d;
}

// A misspelt key would otherwise be ignored and the test would silently run on defaults.
void check_keys(const json& obj, std::initializer_list<std::string_view> known, const std::string& where) {
  if (!obj.is_object()) throw std::runtime_error(where + ": expected an object");
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      throw std::runtime_error(where + ": unknown key \"" + it.key() + "\"");
}

// Overwrites `field` only when the key is present; a value of the wrong type throws.
template <class T>
void take(const json& obj, const char* key, T& field) {
  if (auto it = obj.find(key); it != obj.end()) it->get_to(field);
}

Link parse_link(const json& j, const std::string& where) {
  check_keys(j, {"active", "replay", "recovery", "crc_flit", "crc_data", "ecc_data"}, where);
  Link l;
  take(j, "active", l.active);
  take(j, "replay", l.replay);
  take(j, "recovery", l.recovery);
  take(j, "crc_flit", l.crc_flit);
  take(j, "crc_data", l.crc_data);
  take(j, "ecc_data", l.ecc_data);
  return l;
}

Device parse_device(const json& j, unsigned index) {
  const std::string where = "devices[" + std::to_string(index) + "]";
  check_keys(j,
             {"name", "uuid", "bus_id", "lost", "ecc", "retired_pages", "remap", "clock_reasons", "pcie",
              "temperature", "power_mw", "power_limit_mw", "persistence", "nvlink", "recovery_action", "processes",
              "graphics_processes", "utilization"},
             where);
  Device d = default_device(index);
  take(j, "name", d.name);
  take(j, "uuid", d.uuid);
  take(j, "bus_id", d.bus_id);
  take(j, "lost", d.lost);
  if (auto it = j.find("ecc"); it != j.end()) {
    check_keys(*it, {"volatile_uncorrected", "volatile_corrected", "aggregate_uncorrected", "aggregate_corrected"},
               where + ".ecc");
    take(*it, "volatile_uncorrected", d.volatile_uncorrected);
    take(*it, "volatile_corrected", d.volatile_corrected);
    take(*it, "aggregate_uncorrected", d.aggregate_uncorrected);
    take(*it, "aggregate_corrected", d.aggregate_corrected);
  }
  if (auto it = j.find("retired_pages"); it != j.end()) {
    check_keys(*it, {"sbe", "dbe", "pending"}, where + ".retired_pages");
    take(*it, "sbe", d.sbe_pages);
    take(*it, "dbe", d.dbe_pages);
    take(*it, "pending", d.pages_pending);
  }
  if (auto it = j.find("remap"); it != j.end()) {
    check_keys(*it, {"corrected", "uncorrected", "pending", "failure"}, where + ".remap");
    take(*it, "corrected", d.remap_corrected);
    take(*it, "uncorrected", d.remap_uncorrected);
    take(*it, "pending", d.remap_pending);
    take(*it, "failure", d.remap_failure);
  }
  take(j, "clock_reasons", d.clock_reasons);
  if (auto it = j.find("pcie"); it != j.end()) {
    check_keys(*it, {"gen", "max_gen", "width", "max_width"}, where + ".pcie");
    take(*it, "gen", d.pcie_gen);
    take(*it, "max_gen", d.pcie_max_gen);
    take(*it, "width", d.pcie_width);
    take(*it, "max_width", d.pcie_max_width);
  }
  take(j, "temperature", d.temperature);
  take(j, "utilization", d.utilization);
  take(j, "power_mw", d.power_mw);
  take(j, "power_limit_mw", d.power_limit_mw);
  take(j, "persistence", d.persistence);
  if (auto it = j.find("nvlink"); it != j.end()) {
    d.nvlink.clear();  // null or []: a device without NVLink
    if (!it->is_null()) {
      if (!it->is_array() || it->size() > NVML_NVLINK_MAX_LINKS)
        throw std::runtime_error(where + ".nvlink: expected null or an array of at most 18 links");
      for (std::size_t l = 0; l < it->size(); ++l)
        d.nvlink.push_back(parse_link((*it)[l], where + ".nvlink[" + std::to_string(l) + "]"));
    }
  }
  take(j, "recovery_action", d.recovery_action);
  for (auto [key, list] : {std::pair{"processes", &d.processes}, std::pair{"graphics_processes", &d.graphics_processes}}) {
    take(j, key, *list);
    if (list->size() > kMaxProcesses)
      throw std::runtime_error(where + "." + key + ": more than " + std::to_string(kMaxProcesses) + " pids");
  }
  return d;
}

Event parse_event(const json& j, std::size_t n) {
  const std::string where = "events[" + std::to_string(n) + "]";
  check_keys(j, {"id", "gpu", "type", "xid"}, where);
  if (!j.contains("id") || !j.contains("type")) throw std::runtime_error(where + ": \"id\" and \"type\" are required");
  Event e;
  take(j, "id", e.id);
  take(j, "gpu", e.gpu);
  if (e.gpu >= kMaxDevices) throw std::runtime_error(where + ": gpu out of range");
  const auto type = j.at("type").get<std::string>();
  if (type == "xid") {
    if (!j.contains("xid")) throw std::runtime_error(where + ": an xid event needs \"xid\"");
    e.type = nvmlEventTypeXidCriticalError;
    take(j, "xid", e.data);
  } else if (type == "dbe") {
    e.type = nvmlEventTypeDoubleBitEccError;
  } else {
    throw std::runtime_error(where + ": type must be \"xid\" or \"dbe\", not \"" + type + "\"");
  }
  return e;
}

Scenario parse_scenario(const json& j) {
  check_keys(j, {"driver_version", "init_error", "hang", "fail", "devices", "events"}, "scenario");
  Scenario s;
  take(j, "driver_version", s.driver_version);
  take(j, "init_error", s.init_error);
  if (auto it = j.find("hang"); it != j.end()) s.hang = it->get<std::set<std::string, std::less<>>>();
  if (auto it = j.find("fail"); it != j.end()) s.fail = it->get<std::map<std::string, nvmlReturn_t, std::less<>>>();
  if (auto it = j.find("devices"); it != j.end()) {
    if (!it->is_array() || it->size() > kMaxDevices)
      throw std::runtime_error("devices: expected an array of at most 64 devices");
    for (unsigned i = 0; i < it->size(); ++i) s.devices.push_back(parse_device((*it)[i], i));
  } else {
    for (unsigned i = 0; i < kDefaultDevices; ++i) s.devices.push_back(default_device(i));
  }
  if (auto it = j.find("events"); it != j.end()) {
    if (!it->is_array()) throw std::runtime_error("events: expected an array");
    std::unordered_set<unsigned long long> ids;
    for (std::size_t n = 0; n < it->size(); ++n) {
      s.events.push_back(parse_event((*it)[n], n));
      if (!ids.insert(s.events.back().id).second)
        throw std::runtime_error("events[" + std::to_string(n) + "]: duplicate id");
    }
  }
  return s;
}

// ---- Loading and reloading ---------------------------------------------------------------------------

// What identifies one version of the file without reading it: a rewrite by rename changes the inode,
// an in-place rewrite the size or mtime.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  bool operator==(const FileId& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

// File times advance in coarse ticks, and a freed inode is soon reused, so a rewrite made shortly after
// the version we hold can carry the same identity. As git does with "racily clean" files, a version
// whose mtime is this close to when we last looked is confirmed by its content (the file is small).
constexpr auto kRacyWindow = 1s;

struct Loaded {
  std::shared_ptr<const Scenario> scenario;  // null: no usable scenario
  bool missing = false;                      // no variable or no file (as opposed to a broken file)
};

std::mutex g_cache_mutex;
std::string g_path;                          // the file g_scenario came from
FileId g_id;                                 // ...the version we last confirmed
std::string g_text;                          // ...its text
std::chrono::system_clock::time_point g_checked_at;  // when we last read it
std::shared_ptr<const Scenario> g_scenario;  // the last good parse of g_path
std::optional<FileId> g_reported_broken;     // to complain once per broken version, not per call

std::chrono::system_clock::time_point to_time_point(const timespec& t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::seconds(t.tv_sec) +
                                                                      std::chrono::nanoseconds(t.tv_nsec)));
}

// The scenario as of now. Usually one stat; never sleeps, so the lock is held briefly. A broken file (a
// typo, or a half-written one) keeps the last good scenario of the same path and is read again on the
// next call.
Loaded load() {
  const char* env = std::getenv("FAKE_NVML_SCENARIO");
  std::lock_guard lock(g_cache_mutex);
  struct stat st {};
  if (env == nullptr || *env == '\0' || ::stat(env, &st) != 0) {
    g_path.clear();
    g_scenario.reset();
    return {nullptr, true};
  }
  const FileId id{st.st_dev, st.st_ino, st.st_size, st.st_mtim};
  const bool same_file = g_scenario && g_path == env;
  if (same_file && g_id == id && g_checked_at - to_time_point(id.mtime) > kRacyWindow) return {g_scenario, false};
  if (!same_file) g_scenario.reset();
  g_path = env;
  try {
    std::ifstream in(env);
    std::stringstream text;
    text << in.rdbuf();
    if (!same_file || text.str() != g_text) {
      auto parsed = std::make_shared<const Scenario>(parse_scenario(json::parse(text.str())));
      g_scenario = std::move(parsed);
      g_text = text.str();
    }
    g_id = id;
    g_checked_at = std::chrono::system_clock::now();
    g_reported_broken.reset();
  } catch (const std::exception& e) {
    if (!g_reported_broken || !(*g_reported_broken == id)) {
      std::fprintf(stderr, "fake-nvml: %s: %s\n", env, e.what());
      g_reported_broken = id;
    }
  }
  return {g_scenario, false};
}

// ---- Initialisation ----------------------------------------------------------------------------------

// Like the real library, init is counted: every successful nvmlInit needs its nvmlShutdown.
std::mutex g_init_mutex;
unsigned g_init_count = 0;

bool initialized() {
  std::lock_guard lock(g_init_mutex);
  return g_init_count > 0;
}

// ---- The common path of every entry point ------------------------------------------------------------

struct Entry {
  std::shared_ptr<const Scenario> scenario;  // set unless rc says why there is none
  nvmlReturn_t rc = NVML_SUCCESS;
};

// Waits while the call is listed in "hang" (polling the file, holding no lock, so other threads go on),
// then applies the scenario's failure override for the call. Without a scenario file there is no
// driver: init reports that, every other call finds NVML uninitialised. Removing the file therefore
// also releases every hung call.
Entry enter(std::string_view call, bool needs_init = true) {
  for (;;) {
    Loaded now = load();
    if (!now.scenario) {
      if (!now.missing) return {nullptr, NVML_ERROR_UNKNOWN};  // broken from the start: see stderr
      return {nullptr, needs_init ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_DRIVER_NOT_LOADED};
    }
    if (now.scenario->hang.contains(call)) {
      std::this_thread::sleep_for(kHangPoll);
      continue;
    }
    if (needs_init && !initialized()) return {now.scenario, NVML_ERROR_UNINITIALIZED};
    if (auto it = now.scenario->fail.find(call); it != now.scenario->fail.end()) return {now.scenario, it->second};
    return {now.scenario, NVML_SUCCESS};
  }
}

template <class Answer>
nvmlReturn_t on_system(std::string_view call, Answer&& answer) noexcept {
  try {
    Entry e = enter(call);
    if (e.rc != NVML_SUCCESS) return e.rc;
    return answer(*e.scenario);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// A handle whose index the scenario no longer has (the list shrank) answers like a GPU that fell off the
// bus, as does a device marked lost.
template <class Answer>
nvmlReturn_t on_device(std::string_view call, nvmlDevice_t handle, Answer&& answer) noexcept {
  try {
    Entry e = enter(call);
    if (e.rc != NVML_SUCCESS) return e.rc;
    const auto index = index_of(handle);
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    if (*index >= e.scenario->devices.size()) return NVML_ERROR_GPU_IS_LOST;
    const Device& d = e.scenario->devices[*index];
    if (d.lost) return NVML_ERROR_GPU_IS_LOST;
    return answer(d);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

nvmlReturn_t copy_string(const std::string& s, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

template <class T>
nvmlReturn_t put(T* out, T value) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = value;
  return NVML_SUCCESS;
}

nvmlEnableState_t enabled(bool b) { return b ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED; }

nvmlReturn_t init(std::string_view call) noexcept {
  try {
    Entry e = enter(call, /*needs_init=*/false);
    if (e.rc != NVML_SUCCESS) return e.rc;
    if (e.scenario->init_error != NVML_SUCCESS) return e.scenario->init_error;
    std::lock_guard lock(g_init_mutex);
    ++g_init_count;
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

nvmlReturn_t clock_reasons(std::string_view call, nvmlDevice_t device, unsigned long long* reasons) noexcept {
  return on_device(call, device, [&](const Device& d) { return put(reasons, d.clock_reasons); });
}

// infoCount is in/out as in the real API: the room in `infos` on the way in, the number of processes
// on the way out; too little room answers INSUFFICIENT_SIZE with the count set, and a room of 0 with
// no processes is SUCCESS (infos may then be null). Info is nvmlProcessInfo_t (_v2, _v3) or
// nvmlProcessInfo_v1_t (the unsuffixed names): each is written with its own layout.
template <class Info>
nvmlReturn_t running_processes(std::string_view call, nvmlDevice_t device, unsigned int* infoCount, Info* infos,
                               bool graphics) noexcept {
  return on_device(call, device, [&](const Device& d) -> nvmlReturn_t {
    if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const std::vector<unsigned>& pids = graphics ? d.graphics_processes : d.processes;
    const unsigned room = *infoCount;
    *infoCount = static_cast<unsigned>(pids.size());
    if (room < pids.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    if (!pids.empty() && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (std::size_t i = 0; i < pids.size(); ++i) {
      Info info{};
      info.pid = pids[i];
      info.usedGpuMemory = 1ULL << 30;
      if constexpr (std::is_same_v<Info, nvmlProcessInfo_t>) {
        info.gpuInstanceId = 0xFFFFFFFFu;  // not MIG
        info.computeInstanceId = 0xFFFFFFFFu;
      }
      infos[i] = info;
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t wait_event(std::string_view call, nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeoutms) noexcept {
  try {
    Entry e = enter(call);
    if (e.rc != NVML_SUCCESS) return e.rc;
    if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
    std::shared_ptr<const Scenario> scenario = e.scenario;
    for (;;) {
      if (scenario) {
        std::lock_guard lock(set->mutex);
        for (const Event& ev : scenario->events) {
          if (set->old_or_delivered.contains(ev.id)) continue;
          const auto reg = set->registered.find(ev.gpu);
          if (reg == set->registered.end() || (reg->second & ev.type) == 0) continue;
          set->old_or_delivered.insert(ev.id);
          *data = nvmlEventData_t{&g_handles[ev.gpu], ev.type, ev.data, 0, 0};
          return NVML_SUCCESS;
        }
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return NVML_ERROR_TIMEOUT;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(kEventPoll, deadline - now));
      scenario = load().scenario;  // the test may add events while we wait
    }
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

}  // namespace

// ---- The exported NVML entry points ------------------------------------------------------------------

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() { return init(__func__); }
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit() { return init(__func__); }

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  try {
    // A missing scenario file does not stop a shutdown; a "hang" or "fail" entry for it does.
    Entry e = enter(__func__, /*needs_init=*/false);
    if (e.scenario && e.rc != NVML_SUCCESS) return e.rc;
    std::lock_guard lock(g_init_mutex);
    if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
    --g_init_count;
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// Pure: no scenario, no hang, no failure override (the real one works before init too).
FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    default: return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return on_system(__func__, [&](const Scenario& s) { return copy_string(s.driver_version, version, length); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return on_system(__func__, [&](const Scenario& s) { return put(count, static_cast<unsigned>(s.devices.size())); });
}

// A lost device has no handle to give, as on real hardware.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return on_system(__func__, [&](const Scenario& s) -> nvmlReturn_t {
    if (device == nullptr || index >= s.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
    if (s.devices[index].lost) return NVML_ERROR_GPU_IS_LOST;
    *device = &g_handles[index];
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return on_device(__func__, device, [&](const Device& d) { return copy_string(d.name, name, length); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return on_device(__func__, device, [&](const Device& d) { return copy_string(d.uuid, uuid, length); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = nvmlPciInfo_t{};
    unsigned domain = 0, bus = 0, dev = 0, function = 0;
    if (std::sscanf(d.bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &function) == 4) {
      pci->domain = domain;
      pci->bus = bus;
      pci->device = dev;
      std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xffffu, bus, dev,
                    function);
    }
    pci->pciDeviceId = 0x233010DE;  // H100 SXM5 80GB; nothing in healthd judges it
    pci->pciSubSystemId = 0x16C110DE;
    std::snprintf(pci->busId, sizeof pci->busId, "%s", d.bus_id.c_str());
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                          nvmlEccCounterType_t counterType, unsigned long long* count) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    const bool uncorrected = errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
    if (!uncorrected && errorType != NVML_MEMORY_ERROR_TYPE_CORRECTED) return NVML_ERROR_INVALID_ARGUMENT;
    if (counterType == NVML_VOLATILE_ECC) return put(count, uncorrected ? d.volatile_uncorrected : d.volatile_corrected);
    if (counterType == NVML_AGGREGATE_ECC)
      return put(count, uncorrected ? d.aggregate_uncorrected : d.aggregate_corrected);
    return NVML_ERROR_INVALID_ARGUMENT;
  });
}

// pageCount is in/out as in the real API: the room in `addresses` on the way in, the number of pages
// on the way out; too little room answers INSUFFICIENT_SIZE with the count set. Addresses are zeros.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                        unsigned int* pageCount, unsigned long long* addresses) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (pageCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned pages = 0;
    if (cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
      pages = d.sbe_pages;
    else if (cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
      pages = d.dbe_pages;
    else
      return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned room = *pageCount;
    *pageCount = pages;
    if (room < pages) return NVML_ERROR_INSUFFICIENT_SIZE;
    if (pages > 0 && addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::fill_n(addresses, pages, 0ULL);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                     nvmlEnableState_t* isPending) {
  return on_device(__func__, device, [&](const Device& d) { return put(isPending, enabled(d.pages_pending)); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                        unsigned int* uncRows, unsigned int* isPending,
                                                        unsigned int* failureOccurred) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
    *corrRows = d.remap_corrected;
    *uncRows = d.remap_uncorrected;
    *isPending = d.remap_pending ? 1 : 0;
    *failureOccurred = d.remap_failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                     unsigned long long* reasons) {
  return clock_reasons(__func__, device, reasons);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                        unsigned long long* reasons) {
  return clock_reasons(__func__, device, reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return on_device(__func__, device, [&](const Device& d) { return put(gen, d.pcie_gen); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return on_device(__func__, device, [&](const Device& d) { return put(gen, d.pcie_max_gen); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return on_device(__func__, device, [&](const Device& d) { return put(width, d.pcie_width); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return on_device(__func__, device, [&](const Device& d) { return put(width, d.pcie_max_width); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                                       unsigned int* temp) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    return put(temp, d.temperature);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    utilization->gpu = d.utilization;
    utilization->memory = d.utilization;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return on_device(__func__, device, [&](const Device& d) { return put(power, d.power_mw); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return on_device(__func__, device, [&](const Device& d) { return put(limit, d.power_limit_mw); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  return on_device(__func__, device, [&](const Device& d) { return put(mode, enabled(d.persistence)); });
}

// Links past the scenario's array answer NOT_SUPPORTED, as on a device with fewer links; past the ABI's
// maximum, INVALID_ARGUMENT.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                       nvmlEnableState_t* isActive) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
    if (link >= d.nvlink.size()) return NVML_ERROR_NOT_SUPPORTED;
    return put(isActive, enabled(d.nvlink[link].active));
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                              nvmlNvLinkErrorCounter_t counter,
                                                              unsigned long long* counterValue) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
    if (link >= d.nvlink.size()) return NVML_ERROR_NOT_SUPPORTED;
    const Link& l = d.nvlink[link];
    switch (counter) {
      case NVML_NVLINK_ERROR_DL_REPLAY: return put(counterValue, l.replay);
      case NVML_NVLINK_ERROR_DL_RECOVERY: return put(counterValue, l.recovery);
      case NVML_NVLINK_ERROR_DL_CRC_FLIT: return put(counterValue, l.crc_flit);
      case NVML_NVLINK_ERROR_DL_CRC_DATA: return put(counterValue, l.crc_data);
      case NVML_NVLINK_ERROR_DL_ECC_DATA: return put(counterValue, l.ecc_data);
      default: return NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

#ifndef FAKE_NVML_OLD_DRIVER
// Only the GPU recovery action is answered; every other field reports NOT_SUPPORTED in its own slot
// while the call as a whole succeeds, as the real one does for fields a driver lacks.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                       nvmlFieldValue_t* values) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (valuesCount < 0 || (valuesCount > 0 && values == nullptr)) return NVML_ERROR_INVALID_ARGUMENT;
    const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (int i = 0; i < valuesCount; ++i) {
      nvmlFieldValue_t& v = values[i];
      v.timestamp = now_us;
      v.latencyUsec = 0;
      if (v.fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) {
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v.value.uiVal = d.recovery_action;
        v.nvmlReturn = NVML_SUCCESS;
      } else {
        v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      }
    }
    return NVML_SUCCESS;
  });
}
#endif

// The events in the scenario at this moment are old to the new set: they are never delivered by it.
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return on_system(__func__, [&](const Scenario& s) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto created = std::make_unique<nvmlEventSet_st>();
    for (const Event& ev : s.events) created->old_or_delivered.insert(ev.id);
    *set = created.release();
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  return on_device(__func__, device, [&](const Device&) { return put(eventTypes, kSupportedEvents); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                       nvmlEventSet_t set) {
  return on_device(__func__, device, [&](const Device& d) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if ((eventTypes & ~kSupportedEvents) != 0) return NVML_ERROR_NOT_SUPPORTED;
    std::lock_guard lock(set->mutex);
    set->registered[d.index] |= eventTypes;
    return NVML_SUCCESS;
  });
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return wait_event(__func__, set, data, timeoutms);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return wait_event(__func__, set, data, timeoutms);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return on_system(__func__, [&](const Scenario&) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    delete set;
    return NVML_SUCCESS;
  });
}

// The processes on a GPU. A driver of today exports all three versions; the old-driver variant lacks
// _v3 (the unsuffixed names take the shorter nvmlProcessInfo_v1_t).
#ifndef FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  return running_processes(__func__, device, infoCount, infos, /*graphics=*/false);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                       nvmlProcessInfo_t* infos) {
  return running_processes(__func__, device, infoCount, infos, /*graphics=*/true);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  return running_processes(__func__, device, infoCount, infos, /*graphics=*/false);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                                       nvmlProcessInfo_t* infos) {
  return running_processes(__func__, device, infoCount, infos, /*graphics=*/true);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                   nvmlProcessInfo_v1_t* infos) {
  return running_processes(__func__, device, infoCount, infos, /*graphics=*/false);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                    nvmlProcessInfo_v1_t* infos) {
  return running_processes(__func__, device, infoCount, infos, /*graphics=*/true);
}
