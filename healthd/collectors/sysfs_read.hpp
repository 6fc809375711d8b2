// Small readers for sysfs/procfs files: one value per file, errors as values that name the file.
// Every path handed in is already under the host root (see under_root in host_path.hpp).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

namespace ar::healthd {

// The whole file with trailing whitespace (the newline sysfs adds) removed.
std::expected<std::string, std::string> read_trimmed(const std::filesystem::path& file);

// A file holding one unsigned decimal (or 0x-prefixed hex) integer.
std::expected<std::uint64_t, std::string> read_u64(const std::filesystem::path& file);

// Entries of `dir` whose name starts with `prefix` followed only by digits ("neuron" matches neuron0,
// neuron12, not neuron_core0), sorted by that number. A missing directory is an empty list.
std::vector<std::filesystem::path> numbered_entries(const std::filesystem::path& dir, const std::string& prefix);

// Counts CPUs in a kernel CPU list such as "0-95" or "0-3,8,10-11" (/sys/devices/system/cpu/online).
std::expected<std::uint32_t, std::string> count_cpu_list(const std::string& list);

}  // namespace ar::healthd
