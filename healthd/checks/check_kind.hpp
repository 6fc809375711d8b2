// What a check module offers the core: its config section and a factory. The registry
// (registry.cpp) lists the kinds in one explicit list; the daemon builds whatever the config asks for
// from it, knowing no check by name.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct KernelRecord;  // collectors/kernel_log_reader.hpp

// A reader of kernel-log records ahead of the kernel-log check's own rules (the XID check takes the
// NVRM Xid records, whose policy it owns). Called on the kernel-log check's thread, one record at a
// time, and only with the kernel's own records (facility 0); the tap judges the level and the text.
// new_fault: the record calls for a judgment now (a fault, or a notice to carry out), not at the
// next periodic sweep.
enum class LineVerdict { not_mine, taken, new_fault };
using KernelLineTap = std::function<LineVerdict(const KernelRecord& record)>;
using KernelLineTaps = std::vector<KernelLineTap>;

// What a factory gets besides its own settings.
struct BuildContext {
  std::string node_name;
  std::filesystem::path host_root;   // every host path is read under it
  std::filesystem::path state_dir;   // a check's state across restarts: state_dir / "<check>.json"
  // How many jobs run here now (kept by the event loop, which owns the job registry), for checks that
  // wait for an idle node (the DCGM diagnostic).
  std::shared_ptr<const std::atomic<std::size_t>> jobs_here = std::make_shared<std::atomic<std::size_t>>(0);
  // Taps on the kernel log (see above): a factory adds to it, the kernel-log check reads it once
  // every check is built. Never changed after build_checks returns.
  std::shared_ptr<KernelLineTaps> kernel_line_taps = std::make_shared<KernelLineTaps>();
};

struct CheckKind {
  CheckSection section;  // [checks.NAME]: its reader
  // The checks these settings ask for, in the order their results are shown: none when disabled.
  std::function<std::vector<std::shared_ptr<Check>>(const CheckSettings&, BuildContext&)> build;
  // The devices its results describe (checks/check.hpp), if it keeps such a list: built whether or
  // not the kind is enabled (an empty list then), so the status always has the member.
  std::optional<DeviceInventory> inventory = std::nullopt;
};

// A kind whose factory takes its own settings type S.
template <class S>
CheckKind check_kind(CheckSection section, std::function<std::vector<std::shared_ptr<Check>>(const S&, BuildContext&)> build) {
  return {std::move(section), [build = std::move(build)](const CheckSettings& s, BuildContext& context) {
            return build(dynamic_cast<const S&>(s), context);
          }};
}

// A kind that builds at most one check: `build` returns it, or null when the settings turn it off.
template <class S>
CheckKind single_check_kind(CheckSection section, std::function<std::shared_ptr<Check>(const S&, BuildContext&)> build) {
  return check_kind<S>(std::move(section), [build = std::move(build)](const S& s, BuildContext& context) {
    std::vector<std::shared_ptr<Check>> checks;
    if (auto check = build(s, context)) checks.push_back(std::move(check));
    return checks;
  });
}

}  // namespace ar::healthd
