#include "kernel_log_reader.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

// A record's text as the rules see it: its head, cut at a code point, made valid and free of control bytes.
std::string finish_text(std::string_view raw) {
  raw = raw.substr(0, utf8_boundary(raw, KernelLogReader::kMaxLineBytes));
  return sanitize(raw, KernelLogReader::kMaxLineBytes);
}

// The kernel keeps a facility in 8 bits beside a 3-bit level: a priority is at most 255 * 8 + 7.
constexpr std::uint64_t kMaxPriority = 2047;
// "PRI,SEQ,TS,FLAGS[,caller=...];" is a few dozen bytes; a ';' further in is part of a message.
constexpr std::size_t kMaxKmsgPrefix = 128;

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::uint64_t> number(std::string_view s) {
  if (!all_digits(s)) return std::nullopt;
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

KernelRecord with_priority(std::uint64_t priority) {
  KernelRecord r;
  r.level = static_cast<int>(priority & 7);
  r.facility = static_cast<int>(priority >> 3);
  return r;
}

// "[ 1234.567890] " as dmesg -r puts it before the message: digits, dots and spaces in brackets.
std::string_view skip_timestamp(std::string_view s) {
  if (s.empty() || s.front() != '[') return s;
  const auto close = s.find(']');
  if (close == std::string_view::npos || close > 32) return s;
  const auto inside = s.substr(1, close - 1);
  const bool is_time = inside.find_first_of("0123456789") != std::string_view::npos &&
                       std::all_of(inside.begin(), inside.end(), [](char c) { return c == ' ' || c == '.' || (c >= '0' && c <= '9'); });
  return is_time ? s.substr(close + 1) : s;
}

}  // namespace

std::optional<int> parse_log_level(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, int>, 13> kNames{{
      {"emerg", 0}, {"emergency", 0}, {"panic", 0}, {"alert", 1}, {"crit", 2}, {"critical", 2}, {"err", 3},
      {"error", 3}, {"warning", 4}, {"warn", 4}, {"notice", 5}, {"info", 6}, {"debug", 7}}};
  for (const auto& [n, level] : kNames)
    if (n == name) return level;
  return std::nullopt;
}

std::string log_level_name(int level) {
  static constexpr std::array<const char*, 8> kNames{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"};
  if (level < 0 || level > 7) return "level " + std::to_string(level);
  return kNames[static_cast<std::size_t>(level)];
}

std::optional<KernelRecord> parse_kmsg_record(std::string_view record) {
  const auto semi = record.substr(0, kMaxKmsgPrefix).find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  // PRI,SEQ,TS,FLAGS and, from newer kernels, more fields (",caller=T123"): the first three are numbers.
  std::array<std::string_view, 3> fields;
  std::string_view prefix = record.substr(0, semi);
  for (auto& field : fields) {
    const auto comma = prefix.find(',');
    if (comma == std::string_view::npos) return std::nullopt;  // FLAGS (at least) must follow
    field = prefix.substr(0, comma);
    prefix.remove_prefix(comma + 1);
  }
  const auto priority = number(fields[0]);
  const auto seq = number(fields[1]);
  if (!priority || *priority > kMaxPriority || !seq || !number(fields[2])) return std::nullopt;
  auto r = with_priority(*priority);
  r.seq = *seq;
  auto message = record.substr(semi + 1);
  if (auto nl = message.find('\n'); nl != std::string_view::npos) message = message.substr(0, nl);  // continuation lines follow
  r.text = finish_text(message);
  return r;
}

std::optional<KernelRecord> parse_log_line(std::string_view line) {
  if (line.empty()) return std::nullopt;
  if (line.front() != '<') return line.front() >= '0' && line.front() <= '9' ? parse_kmsg_record(line) : std::nullopt;
  const auto close = line.find('>');
  if (close == std::string_view::npos || close > 5) return std::nullopt;  // "<2047>" at most
  const auto priority = number(line.substr(1, close - 1));
  if (!priority || *priority > kMaxPriority) return std::nullopt;
  auto r = with_priority(*priority);
  auto message = skip_timestamp(line.substr(close + 1));
  // One space may separate the message from what comes before it (dmesg -r's timestamp; rsyslog's
  // %msg% starts with one).
  if (!message.empty() && message.front() == ' ') message.remove_prefix(1);
  r.text = finish_text(message);
  return r;
}

KernelLogReader::~KernelLogReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::expected<void, std::string> KernelLogReader::open() { return open_at(/*at_end=*/true); }

std::expected<void, std::string> KernelLogReader::open_at(bool at_end) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) return std::unexpected(path_.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  ::fstat(fd_, &st);
  is_kmsg_ = S_ISCHR(st.st_mode);
  inode_ = st.st_ino;
  partial_.clear();
  skipping_ = false;
  after_kmsg_line_ = false;
  if (is_kmsg_) {
    if (at_end) ::lseek(fd_, 0, SEEK_END);  // /dev/kmsg: SEEK_END means "after the last record"
    offset_ = 0;
  } else {
    offset_ = at_end ? st.st_size : 0;
  }
  return {};
}

void KernelLogReader::count_without_priority() {
  ++without_priority_;
  if (std::exchange(said_without_priority_, true)) return;
  // Once per reader: a file forwarded without priorities would otherwise say it on every line.
  spdlog::warn("kernel_log: {}: lines without a priority are ignored: nothing tells a driver's message from "
               "text any user can get into a log (a crashing program's file name, a write to /dev/kmsg); "
               "forward the kernel's messages with theirs (\"<3>...\" as dmesg -r and rsyslog's %pri% write it)",
               path_.string());
}

std::vector<KernelRecord> KernelLogReader::read_records() {
  std::vector<KernelRecord> records;
  // A record is at most 8 KiB (the kernel's CONSOLE_EXT_LOG_MAX); a longer one fails with EINVAL.
  char buf[8192];
  while (records.size() < kMaxRecordsPerRead) {
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EPIPE) continue;  // records were overwritten before we read them: skip on
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    auto record = parse_kmsg_record(std::string_view(buf, static_cast<std::size_t>(n)));
    if (!record) {
      count_without_priority();
      continue;
    }
    last_seq_ = record->seq;
    records.push_back(std::move(*record));
  }
  return records;
}

void KernelLogReader::take_line(std::string_view line, std::vector<KernelRecord>& records) {
  // A copy of /dev/kmsg holds each record's " KEY=VALUE" continuation lines after it: not records.
  if (after_kmsg_line_ && !line.empty() && line.front() == ' ') return;
  auto record = parse_log_line(line);
  after_kmsg_line_ = record && !line.empty() && line.front() != '<';
  if (!record) {
    if (!line.empty()) count_without_priority();
    return;
  }
  if (after_kmsg_line_) last_seq_ = record->seq;
  records.push_back(std::move(*record));
}

void KernelLogReader::split(std::string_view data, std::vector<KernelRecord>& records) {
  while (!data.empty()) {
    const auto nl = data.find('\n');
    const auto piece = data.substr(0, nl);
    if (!skipping_) {
      const std::size_t room = kMaxLineBytes - partial_.size();
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) {
        // Too long: its head is the record (a rule still sees how it starts); the rest is dropped.
        take_line(partial_, records);
        partial_.clear();
        skipping_ = true;
      }
    }
    if (nl == std::string_view::npos) return;
    if (!skipping_) take_line(partial_, records);
    partial_.clear();
    skipping_ = false;
    data.remove_prefix(nl + 1);
  }
}

std::expected<std::vector<KernelRecord>, std::string> KernelLogReader::read_new() {
  if (fd_ < 0) {
    // The log was missing at start: everything in it when it appears is new.
    if (auto r = open_at(/*at_end=*/false); !r) return std::unexpected(r.error());
  }
  if (is_kmsg_) return read_records();

  std::vector<KernelRecord> records;
  // A regular file: rotated (new inode) or truncated means start from its beginning.
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return records;  // gone for now (rotation in progress)
  if (st.st_ino != inode_) {
    if (auto r = open_at(false); !r) return std::unexpected(r.error());
  } else if (st.st_size < offset_) {
    offset_ = 0;
    partial_.clear();
    skipping_ = false;
    after_kmsg_line_ = false;
  }
  char buf[65536];
  for (std::size_t read = 0; read < kMaxBytesPerRead;) {
    ssize_t n = ::pread(fd_, buf, std::min(sizeof(buf), kMaxBytesPerRead - read), offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && read == 0) return std::unexpected(path_.string() + ": read: " + std::strerror(errno));
    if (n < 0) break;  // the records read so far now; the error again on the next call
    if (n == 0) break;
    offset_ += n;
    read += static_cast<std::size_t>(n);
    split(std::string_view(buf, static_cast<std::size_t>(n)), records);
  }
  return records;
}

}  // namespace ar::healthd
