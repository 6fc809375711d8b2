#include "config/config_files.hpp"

#include <algorithm>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.hpp"

namespace ar::healthd {

Parsed<toml::table> parse_toml(std::string_view text, const std::string& source_name) {
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    return std::unexpected(where(source_name, e.source()) + ": " + std::string(e.description()));
  }
}

namespace {

// Merges the drop-in `from` into `into`: a table is merged key by key, an array of tables is
// appended to, any other value replaces the earlier one. Nodes are moved, so they keep their
// file and position for errors. A key that is a table in one file and a value in the other is an
// error at the drop-in's key.
Parsed<void> merge_drop_in(toml::table& into, toml::table&& from, const std::string& source) {
  for (auto&& [key, value] : from) {
    toml::node* existing = into.get(key.str());
    if (existing == nullptr) {
      into.insert(key, std::move(value));
      continue;
    }
    auto* into_table = existing->as_table();
    auto* from_table = value.as_table();
    auto* into_array = existing->as_array();
    auto* from_array = value.as_array();
    if ((into_table != nullptr) != (from_table != nullptr))
      return std::unexpected(where(source, key.source()) + ": '" + std::string(key.str()) +
                             "' is a table in one file and a value in another");
    if (into_table != nullptr) {
      if (auto r = merge_drop_in(*into_table, std::move(*from_table), source); !r) return r;
    } else if (into_array != nullptr && from_array != nullptr && into_array->is_array_of_tables() &&
               (from_array->is_array_of_tables() || from_array->empty())) {
      // Added to, never replaced: `rule = []` in a later file adds no rule (it does not clear them).
      for (auto&& item : *from_array) into_array->push_back(std::move(*item.as_table()));
    } else {
      into.insert_or_assign(key, std::move(value));
    }
  }
  return {};
}

// A config file's text. It holds programs a root daemon runs, so it must be a regular file (a link
// to one is fine) owned by root or by healthd's own user and writable by nobody else, and at most
// kMaxConfigBytes; opened without blocking (a FIFO put in its place cannot hang a reload).
constexpr std::size_t kMaxConfigBytes = 1024 * 1024;

Parsed<std::string> read_config_text(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::unexpected(path.string() + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::unexpected(path.string() + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return std::unexpected(path.string() + ": not a regular file");
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return std::unexpected(path.string() + ": owned by uid " + std::to_string(st.st_uid) +
                           ", not by root: a config names programs healthd runs as root");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return std::unexpected(path.string() + ": writable by group or others (chmod go-w): a config names programs healthd runs as root");
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxConfigBytes)
    return std::unexpected(path.string() + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(path.string() + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxConfigBytes)
      return std::unexpected(path.string() + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  }
  return text;
}

// The file, then its drop-ins merged over it. A *.toml entry of the drop-in directory that is not a
// regular file (a dangling link, a FIFO) is an error, not skipped: a drop-in that says report_only
// must not be lost without a word.
}  // namespace

Parsed<toml::table> read_config_files(const std::filesystem::path& file, std::vector<std::filesystem::path>& files) {
  auto read_one = [](const std::filesystem::path& path) -> Parsed<toml::table> {
    auto text = read_config_text(path);
    if (!text) return std::unexpected(text.error());
    return parse_toml(*text, path.string());
  };
  auto root = read_one(file);
  if (!root) return root;
  files.push_back(file);
  const auto dir = drop_in_dir(file);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return root;
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) == 0 && ((dst.st_mode & (S_IWGRP | S_IWOTH)) != 0 || (dst.st_uid != 0 && dst.st_uid != ::geteuid())))
    return std::unexpected(dir.string() + ": owned by another user than root, or writable by group or others: anyone "
                           "who can add a drop-in there can make healthd run a program as root");
  std::vector<std::filesystem::path> drop_ins;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    // An editor's backup (healthd.toml~, .#x.toml) or a package manager's leftover (x.toml.dpkg-old)
    // is not a drop-in.
    if (name.starts_with(".") || !name.ends_with(".toml")) continue;
    drop_ins.push_back(it->path());
  }
  if (ec) return std::unexpected(dir.string() + ": cannot list: " + ec.message());
  std::sort(drop_ins.begin(), drop_ins.end());
  for (const auto& path : drop_ins) {
    auto more = read_one(path);
    if (!more) return more;
    if (auto r = merge_drop_in(*root, std::move(*more), path.string()); !r) return std::unexpected(r.error());
    files.push_back(path);
  }
  return root;
}

}  // namespace ar::healthd
