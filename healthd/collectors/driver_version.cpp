#include "driver_version.hpp"

#include <algorithm>
#include <charconv>

#include "collectors/host_path.hpp"
#include "sysfs_read.hpp"
#include "text/text.hpp"

namespace ar::healthd {

std::strong_ordering DriverVersion::operator<=>(const DriverVersion& other) const {
  const auto n = std::max(parts.size(), other.parts.size());
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned a = i < parts.size() ? parts[i] : 0;
    const unsigned b = i < other.parts.size() ? other.parts[i] : 0;
    if (a != b) return a <=> b;
  }
  return std::strong_ordering::equal;
}

bool DriverVersion::at_least(std::initializer_list<unsigned> release) const {
  return at_least(std::span<const unsigned>(release.begin(), release.size()));
}

bool DriverVersion::at_least(std::span<const unsigned> release) const {
  return *this >= DriverVersion{std::vector<unsigned>(release.begin(), release.end()), {}};
}

std::string release_name(std::span<const unsigned> release) {
  std::size_t n = release.size();
  while (n > 2 && release[n - 1] == 0) --n;
  std::string out;
  // Appended piece by piece: `"." + std::to_string(...)` inserts at the front of a temporary, where
  // GCC 12 at -O3 reports a false -Wrestrict inside libstdc++ (a plain Release build stopped on it).
  for (std::size_t i = 0; i < n; ++i) {
    if (i != 0) out += '.';
    out += std::to_string(release[i]);
  }
  return out;
}

std::optional<DriverVersion> parse_driver_version(const std::string& text) {
  DriverVersion v;
  v.text = sanitize(text, 64);
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (p < end && v.parts.size() < 8) {
    unsigned n = 0;
    auto [next, ec] = std::from_chars(p, end, n);
    if (ec != std::errc()) break;
    v.parts.push_back(n);
    p = next;
    if (p == end || *p != '.') break;
    ++p;
  }
  if (v.parts.empty()) return std::nullopt;
  return v;
}

std::optional<DriverVersion> read_module_version(const std::filesystem::path& host_root, const std::string& module) {
  auto text = read_trimmed(under_root(host_root, "/sys/module/" + module + "/version"));
  if (!text) return std::nullopt;
  return parse_driver_version(*text);
}

}  // namespace ar::healthd
