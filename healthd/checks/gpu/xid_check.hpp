// XID events, from both of their sources: NVML's event set (as they happen) and the kernel log's
// "NVRM: Xid (PCI:...): N, ..." records (when NVML cannot deliver: no library, a hung driver): the
// kernel's own, with the driver's prefix where the message starts (collectors/kernel_log_reader.hpp). The
// same XID on the same GPU from both sources within a few seconds is one event. Only events from now
// on count: the kernel-log reader starts at the end, NVML delivers only new events.
//
// Each XID is judged by the XidPolicy: its action holds once `count` events fell within `window`
// (below that it is a warning), and stays for `hold` after the last event (never before a sweep has
// reported it). Faults whose cure is a reboot or a GPU reset are forgotten when the node has rebooted
// (its boot id changed), so a rebooted node is not drained again by the event that rebooted it.
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "checks/check.hpp"
#include "checks/check_kind.hpp"
#include "checks/gpu/xid_policy.hpp"
#include "collectors/kernel_log_reader.hpp"
#include "collectors/nvml/nvml_events.hpp"

namespace ar::healthd {

struct XidEvent {
  unsigned xid = 0;
  std::string gpu;         // short PCI address ("0000:18:00"), as the kernel log names it; may be empty
  std::string source;      // "nvml" or "kernel_log"
  std::string text;        // the log line, or NVML's description of the event
  std::chrono::system_clock::time_point at;
};

// The least severe level an NVRM Xid record has: the driver prints it without a level
// (nv_printf: KERN_CONT), so the kernel gives it the default message level, KERN_WARNING unless the
// kernel was built or set (kernel.printk's second field) otherwise; notice leaves room for that.
// A user's text in the kernel's segfault report is KERN_INFO.
inline constexpr int kXidMaxLevel = kLevelNotice;

// The XID a message reports, if it is an NVRM Xid message: "NVRM: Xid (PCI:...): N, ..." from its
// first byte (the driver's own prefix; text further in may be anyone's).
std::optional<XidEvent> parse_xid_line(const std::string& message);
// The XID a kernel-log record reports: the kernel's own (facility 0), at kXidMaxLevel or more severe,
// and an NVRM Xid message.
std::optional<XidEvent> parse_xid_record(const KernelRecord& record);

class XidCheck : public Check {
 public:
  using Clock = std::chrono::system_clock;

  XidCheck(XidPolicy policy, std::chrono::seconds hold, std::filesystem::path state_file = {},
           std::filesystem::path boot_id_file = {});

  std::string name() const override { return "gpu_xid"; }
  std::vector<CheckResult> run() override;

  // Records one event (any thread). True when it made a node fault appear (judge the node now).
  bool record(const XidEvent& e);

  // Its event sources. NVML's event set, watched from start() when a library is given here; the
  // kernel log's NVRM Xid records, as a tap for the kernel-log check (checks/check_kind.hpp).
  void watch_nvml_events(std::string library) { nvml_library_ = std::move(library); }
  LineVerdict take_kernel_log_record(const KernelRecord& kernel_record);
  // The old check's events, repeats not yet saved included.
  void carry_over(Check& previous) override;
  // The code of an XID (GPU-XID- and its number) forgets that XID on every GPU.
  bool clear(const std::string& code) override;
  ~XidCheck() override;
  void start(JudgeNow judge_now) override;
  void stop() override;

  // "GPU 3 (00000000:3B:00.0, GPU-...)" by short PCI address, for messages; from the GPU check.
  void set_gpu_labels(std::map<std::string, std::string> labels);

  // For tests: judge at a given time.
  CheckResult judge(Clock::time_point now);

 private:
  struct Tracked {
    unsigned xid = 0;
    std::string gpu;
    Remedy action = Remedy::drain;
    std::deque<Clock::time_point> events;  // within the rule's window
    std::uint64_t total = 0;
    Clock::time_point last_seen;
    std::string last_source;
    std::string text;
    bool active = false;   // the rule's threshold was met: its action holds
    bool judged = false;   // reported by a sweep since it became active
  };
  using Key = std::pair<unsigned, std::string>;

  std::string describe(const Tracked& t) const;
  void save_locked() const;
  void load();

  std::mutex mutex_;  // record() from the NVML event thread and the kernel-log poll, run() from the engine
  XidPolicy policy_;
  std::chrono::seconds hold_;
  std::filesystem::path state_file_;
  std::filesystem::path boot_id_file_;
  std::string boot_id_;
  std::map<Key, Tracked> tracked_;
  std::map<std::string, std::string> labels_;
  bool unsaved_ = false;  // repeats recorded since the last write
  std::string nvml_library_;  // empty: NVML events not watched
  // What the watcher thread calls back through: cleared when this check goes, so a watcher left
  // stuck inside NVML (see stop()) never reaches a check that is gone.
  struct Relay {
    std::mutex mutex;
    XidCheck* check = nullptr;
  };
  std::shared_ptr<Relay> relay_ = std::make_shared<Relay>();
  std::unique_ptr<NvmlEventWatcher> nvml_events_;  // last: its thread calls record() until stopped
};

}  // namespace ar::healthd
