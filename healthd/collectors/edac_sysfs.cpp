#include "edac_sysfs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <expected>
#include <initializer_list>
#include <tuple>
#include <utility>

#include "collectors/host_path.hpp"
#include "text/text.hpp"

namespace ar::healthd {

namespace fs = std::filesystem;

std::optional<std::uint64_t> parse_edac_count(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;  // out of range
  return v;
}

namespace {

// One attribute file: its text (trailing whitespace removed), nullopt when there is no such file, or
// why it cannot be read. Opened without following a symlink and without blocking (a FIFO planted in
// its place would otherwise hang the check until its deadline, every sweep); only a regular file is
// read (sysfs attributes are), and at most kEdacMaxAttrBytes of it.
std::expected<std::optional<std::string>, std::string> read_attr(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return std::optional<std::string>();
    if (e == ELOOP) return std::unexpected(file.string() + ": a symbolic link, not followed");
    return std::unexpected(file.string() + ": cannot open: " + std::strerror(e));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::unexpected(file.string() + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return std::unexpected(file.string() + ": not a regular file");
  std::string text(kEdacMaxAttrBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const auto n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(file.string() + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kEdacMaxAttrBytes)
    return std::unexpected(file.string() + ": longer than " + std::to_string(kEdacMaxAttrBytes) + " bytes, not a sysfs attribute");
  text.resize(got);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.pop_back();
  return std::optional<std::string>(std::move(text));
}

// A counter file: its value, nullopt when absent, or why it cannot be read.
std::expected<std::optional<std::uint64_t>, std::string> read_count(const fs::path& file) {
  auto text = read_attr(file);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<std::uint64_t>();
  if (auto v = parse_edac_count(**text)) return v;
  return std::unexpected(file.string() + ": not an unsigned integer: '" + sanitize(**text, 64) + "'");
}

// A counter the ABI always has: absent is unreadable too.
void read_required(const fs::path& file, std::optional<std::uint64_t>& value, std::string& error) {
  auto v = read_count(file);
  if (!v) error = v.error();
  else if (!*v) error = file.string() + ": absent";
  else value = **v;
}

// A counter that older kernels lack (dimm_*_count, in the ABI since October 2016): absent is no error.
void read_optional(const fs::path& file, std::optional<std::uint64_t>& value, std::string& error) {
  auto v = read_count(file);
  if (!v) error = v.error();
  else value = *v;
}

// "mc12" with prefix "mc" -> 12; anything else (no digits, a sign, a suffix, out of range) -> nullopt.
std::optional<unsigned long> number_after(const std::string& name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return std::nullopt;
  const char* b = name.data() + prefix.size();
  const char* e = name.data() + name.size();
  if (!std::all_of(b, e, [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  unsigned long n = 0;
  auto [end, ec] = std::from_chars(b, e, n);
  if (ec != std::errc() || end != e) return std::nullopt;
  return n;
}

struct Numbered {
  int kind = 0;  // index of the prefix matched
  unsigned long number = 0;
  fs::path path;
  fs::file_type type = fs::file_type::none;  // not following a symlink
  bool operator<(const Numbered& o) const { return std::tie(kind, number) < std::tie(o.kind, o.number); }
};

// The entries of `dir` named one of `prefixes` followed by digits, sorted by prefix then number,
// each with its own type (a symlink is a symlink). At most kEdacMaxDirEntries entries are looked at;
// past that, or on a read error, `error` says so.
std::vector<Numbered> numbered_children(const fs::path& dir, std::initializer_list<std::string_view> prefixes, std::string& error) {
  std::vector<Numbered> out;
  std::error_code ec;
  std::size_t seen = 0;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (++seen > kEdacMaxDirEntries) {
      error = dir.string() + ": more than " + std::to_string(kEdacMaxDirEntries) + " entries; stopped reading";
      break;
    }
    const auto name = it->path().filename().string();
    int kind = 0;
    for (const auto prefix : prefixes) {
      if (auto n = number_after(name, prefix)) {
        std::error_code sec;
        out.push_back({kind, *n, it->path(), it->symlink_status(sec).type()});
        break;
      }
      ++kind;
    }
  }
  if (ec && error.empty()) error = dir.string() + ": " + ec.message();
  std::sort(out.begin(), out.end());
  return out;
}

// Why an entry that must be a directory is not read: empty when it is one.
std::string not_a_directory(const Numbered& e) {
  if (e.type == fs::file_type::directory) return {};
  if (e.type == fs::file_type::symlink) return e.path.string() + ": a symbolic link, not followed";
  return e.path.string() + ": not a directory";
}

EdacDimm read_dimm(const Numbered& entry, std::vector<std::string>& notes) {
  EdacDimm d;
  d.name = entry.path.filename().string();  // checked: dimm<digits> or rank<digits>
  read_optional(entry.path / "dimm_ue_count", d.ue_count, d.ue_error);
  read_optional(entry.path / "dimm_ce_count", d.ce_count, d.ce_error);
  if (auto label = read_attr(entry.path / "dimm_label"); !label)
    notes.push_back(label.error());
  else if (*label)
    d.label = sanitize(**label, 64);
  return d;
}

// How many memory modules may still be read, all controllers together.
struct DimmBudget {
  std::size_t left = kEdacMaxDimms;
  bool said = false;  // the tree error was reported (once)
};

EdacController read_controller(const fs::path& dir, DimmBudget& budget, std::vector<std::string>& tree_errors) {
  EdacController c;
  c.name = dir.filename().string();  // checked: mc<digits>
  read_required(dir / "ue_count", c.ue_count, c.ue_error);
  read_required(dir / "ce_count", c.ce_count, c.ce_error);
  if (auto name = read_attr(dir / "mc_name"); !name)
    c.notes.push_back(name.error());
  else if (*name)
    c.mc_name = sanitize(**name, 64);
  std::string size_error;
  read_optional(dir / "size_mb", c.size_mb, size_error);
  if (!size_error.empty()) c.notes.push_back(size_error);

  std::string list_error;
  for (const auto& e : numbered_children(dir, {"dimm", "rank"}, list_error)) {
    if (auto why = not_a_directory(e); !why.empty()) {
      c.notes.push_back(why);
      continue;
    }
    if (budget.left == 0) {
      if (!budget.said)
        tree_errors.push_back("more than " + std::to_string(kEdacMaxDimms) + " memory modules; stopped reading at " +
                              c.name + "/" + e.path.filename().string());
      budget.said = true;
      break;
    }
    --budget.left;
    c.dimms.push_back(read_dimm(e, c.notes));
  }
  if (!list_error.empty()) c.notes.push_back(list_error);
  return c;
}

}  // namespace

EdacSnapshot read_edac_sysfs(const fs::path& host_root) {
  EdacSnapshot snap;
  const auto mc = under_root(host_root, kEdacMcDir);
  std::error_code ec;
  const auto st = fs::symlink_status(mc, ec);
  if (st.type() == fs::file_type::not_found) return snap;  // no EDAC core: not applicable
  snap.present = true;
  if (ec) {
    snap.errors.push_back(mc.string() + ": " + ec.message());
    return snap;
  }
  if (st.type() == fs::file_type::symlink) {
    snap.errors.push_back(mc.string() + ": a symbolic link, not followed");
    return snap;
  }
  if (st.type() != fs::file_type::directory) {
    snap.errors.push_back(mc.string() + ": not a directory");
    return snap;
  }
  std::string list_error;
  auto entries = numbered_children(mc, {"mc"}, list_error);
  if (!list_error.empty()) snap.errors.push_back(list_error);
  DimmBudget budget;
  for (const auto& e : entries) {
    if (auto why = not_a_directory(e); !why.empty()) {
      snap.errors.push_back(why);
      continue;
    }
    if (snap.controllers.size() == kEdacMaxControllers) {
      snap.errors.push_back("more than " + std::to_string(kEdacMaxControllers) + " memory controllers; stopped reading at " +
                            e.path.filename().string());
      break;
    }
    snap.controllers.push_back(read_controller(e.path, budget, snap.errors));
  }
  return snap;
}

}  // namespace ar::healthd
