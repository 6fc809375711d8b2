// The version a kernel module reports (/sys/module/<name>/version, from its MODULE_VERSION), parsed
// far enough to compare with the release that added a sysfs node: "2.30.2.0" (aws-neuronx-dkms) and
// "2.17.3g" (the efa driver's GitHub build) are both {2, 30, 2, 0} / {2, 17, 3}.
#pragma once

#include <compare>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ar::healthd {

struct DriverVersion {
  std::vector<unsigned> parts;  // the leading dot-separated numbers; a suffix ("g", "-amzn") is dropped
  std::string text;             // as the module printed it (sanitised, at most 64 bytes)

  // Compares the numbers only; missing trailing parts count as 0 (2.30 == 2.30.0).
  std::strong_ordering operator<=>(const DriverVersion& other) const;
  bool operator==(const DriverVersion& other) const { return (*this <=> other) == 0; }
  bool at_least(std::initializer_list<unsigned> release) const;
  bool at_least(std::span<const unsigned> release) const;
};

// "2.30.2.0" -> {2,30,2,0}. Nothing numeric at the start: nullopt.
std::optional<DriverVersion> parse_driver_version(const std::string& text);

// {2, 30, 2} -> "2.30.2" (trailing zero parts after the second dropped).
std::string release_name(std::span<const unsigned> release);

// /sys/module/<module>/version under `host_root`. Absent (a module without MODULE_VERSION, e.g. the
// in-tree efa driver, or the module not loaded): nullopt.
std::optional<DriverVersion> read_module_version(const std::filesystem::path& host_root, const std::string& module);

}  // namespace ar::healthd
