#include "sysfs_read.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace ar::healthd {

std::expected<std::string, std::string> read_trimmed(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::unexpected(file.string() + ": cannot open: " + std::strerror(errno));
  std::stringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::unexpected(file.string() + ": cannot read: " + std::strerror(errno));
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.pop_back();
  return text;
}

std::expected<std::uint64_t, std::string> read_u64(const std::filesystem::path& file) {
  auto text = read_trimmed(file);
  if (!text) return std::unexpected(text.error());
  std::string_view v = *text;
  int base = 10;
  if (v.starts_with("0x") || v.starts_with("0X")) {
    v.remove_prefix(2);
    base = 16;
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value, base);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size())
    return std::unexpected(file.string() + ": not an unsigned integer: '" + *text + "'");
  return value;
}

namespace {
std::optional<unsigned long> number_after(const std::string& name, const std::string& prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return std::nullopt;
  unsigned long n = 0;
  const char* b = name.data() + prefix.size();
  const char* e = name.data() + name.size();
  auto [end, ec] = std::from_chars(b, e, n);
  if (ec != std::errc() || end != e) return std::nullopt;
  return n;
}
}  // namespace

std::vector<std::filesystem::path> numbered_entries(const std::filesystem::path& dir, const std::string& prefix) {
  std::vector<std::pair<unsigned long, std::filesystem::path>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (auto n = number_after(it->path().filename().string(), prefix)) found.emplace_back(*n, it->path());
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> out;
  for (auto& [n, p] : found) out.push_back(std::move(p));
  return out;
}

std::expected<std::uint32_t, std::string> count_cpu_list(const std::string& list) {
  std::uint32_t count = 0;
  std::stringstream in(list);
  std::string part;
  auto bad = [&] { return std::unexpected("not a CPU list: '" + list + "'"); };
  while (std::getline(in, part, ',')) {
    if (part.empty()) return bad();
    auto dash = part.find('-');
    unsigned lo = 0, hi = 0;
    auto parse = [](std::string_view s, unsigned& v) {
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return !s.empty() && ec == std::errc() && end == s.data() + s.size();
    };
    if (dash == std::string::npos) {
      if (!parse(part, lo)) return bad();
      hi = lo;
    } else if (!parse(std::string_view(part).substr(0, dash), lo) || !parse(std::string_view(part).substr(dash + 1), hi) ||
               hi < lo) {
      return bad();
    }
    count += hi - lo + 1;
  }
  if (count == 0) return bad();
  return count;
}

}  // namespace ar::healthd
