// What the kernel's EDAC memory controllers of a host say about their memory, read from sysfs into
// plain values (no judging here).
//
// Layout (the kernel's EDAC sysfs ABI: Documentation/ABI/testing/sysfs-devices-edac, and
// Documentation/admin-guide/ras.rst, "dimmX or rankX directories"):
//   /sys/devices/system/edac/mc/                     present when the EDAC core is (built in or
//                                                    loaded); empty of mc<N> when no memory
//                                                    controller driver bound (most VMs)
//   /sys/devices/system/edac/mc/mc<N>/               one directory per memory controller
//     ue_count, ce_count                             uncorrectable / correctable errors counted on
//                                                    it, those with no DIMM information included,
//                                                    since the driver loaded or the last write to
//                                                    reset_counters ("%u")
//     mc_name                                        the controller's type ("Skylake Socket#0 IMC#0")
//     size_mb                                        the memory it manages, in MB
//     dimm<N>/ or rank<N>/                           one per memory module (rank<N> where the
//                                                    controller cannot tell modules apart):
//       dimm_ue_count, dimm_ce_count                 that module's share of the counts (in the ABI
//                                                    since October 2016: older kernels lack them)
//       dimm_label                                   the slot's silk-screen label, as set by the
//                                                    driver (DMI) or an admin; may be empty
// The sysfs core adds `power/` directories, `subsystem` symlinks and `uevent` files; only the
// names above are read.
//
// Every byte is taken as hostile (host_root may be a tree someone else can write): an attribute is
// opened without following a symlink or blocking (a FIFO in its place is refused, not waited on),
// only a regular file is read, and at most kEdacMaxAttrBytes of it; a directory entry that is a
// symlink or not a directory where one is expected is reported, never followed. At most
// kEdacMaxControllers controllers and kEdacMaxDimms modules (all controllers together) are read, and
// at most kEdacMaxDirEntries entries of any one directory are looked at. A counter that is not one
// unsigned decimal integer is recorded as unreadable, with why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ar::healthd {

inline constexpr const char* kEdacMcDir = "/sys/devices/system/edac/mc";
inline constexpr std::size_t kEdacMaxControllers = 64;
inline constexpr std::size_t kEdacMaxDimms = 512;
inline constexpr std::size_t kEdacMaxDirEntries = 4096;
inline constexpr std::size_t kEdacMaxAttrBytes = 4096;  // a sysfs attribute is at most one page

struct EdacDimm {
  std::string name;   // "dimm3" or "rank3"
  std::string label;  // dimm_label, sanitized; empty when unset or unreadable
  std::optional<std::uint64_t> ue_count;  // dimm_ue_count; nullopt: absent (older kernel) or unreadable
  std::optional<std::uint64_t> ce_count;  // dimm_ce_count
  std::string ue_error, ce_error;         // a counter file present but unreadable: why
};

struct EdacController {
  std::string name;     // "mc0"
  std::string mc_name;  // sanitized; empty when unreadable
  std::optional<std::uint64_t> size_mb;
  std::optional<std::uint64_t> ue_count;  // nullopt: unreadable (see ue_error)
  std::optional<std::uint64_t> ce_count;  // nullopt: unreadable (see ce_error)
  std::string ue_error, ce_error;
  std::vector<EdacDimm> dimms;            // by kind (dimm before rank), then number
  // Not counters, so shown but never judged: mc_name, size_mb or a dimm_label unreadable, a dimm<N>
  // that is not a directory (its share is still in the controller's counts).
  std::vector<std::string> notes;
};

struct EdacSnapshot {
  bool present = false;  // kEdacMcDir exists (as anything: a file there is an error below, not "absent")
  std::vector<EdacController> controllers;  // by number, at most kEdacMaxControllers
  std::vector<std::string> errors;          // the tree itself: mc not a directory, an mc<N> that is not one, too many
};

EdacSnapshot read_edac_sysfs(const std::filesystem::path& host_root);

// One unsigned decimal integer, as the kernel prints a counter ("%u\n"); trailing whitespace allowed.
std::optional<std::uint64_t> parse_edac_count(std::string_view text);

}  // namespace ar::healthd
