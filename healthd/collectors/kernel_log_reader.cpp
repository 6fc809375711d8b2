#include "kernel_log_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

// A line as the rules see it: its head, cut at a code point, made valid and free of control bytes.
std::string finish_line(std::string_view raw) {
  raw = raw.substr(0, utf8_boundary(raw, KernelLogReader::kMaxLineBytes));
  return sanitize(raw, KernelLogReader::kMaxLineBytes);
}

}  // namespace

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
  if (is_kmsg_) {
    if (at_end) ::lseek(fd_, 0, SEEK_END);  // /dev/kmsg: SEEK_END means "after the last record"
    offset_ = 0;
  } else {
    offset_ = at_end ? st.st_size : 0;
  }
  return {};
}

std::vector<std::string> KernelLogReader::read_records() {
  std::vector<std::string> lines;
  // A record is at most 8 KiB (the kernel's CONSOLE_EXT_LOG_MAX); a longer one fails with EINVAL.
  char record[8192];
  while (lines.size() < kMaxRecordsPerRead) {
    ssize_t n = ::read(fd_, record, sizeof(record));
    if (n < 0 && errno == EPIPE) continue;  // records were overwritten before we read them: skip on
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view text(record, static_cast<std::size_t>(n));
    if (auto semi = text.find(';'); semi != std::string_view::npos) text.remove_prefix(semi + 1);
    if (auto nl = text.find('\n'); nl != std::string_view::npos) text = text.substr(0, nl);  // continuation lines follow
    lines.push_back(finish_line(text));
  }
  return lines;
}

void KernelLogReader::split(std::string_view data, std::vector<std::string>& lines) {
  while (!data.empty()) {
    const auto nl = data.find('\n');
    const auto piece = data.substr(0, nl);
    if (!skipping_) {
      const std::size_t room = kMaxLineBytes - partial_.size();
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) {
        // Too long: its head is the line (a rule still sees how it starts); the rest is dropped.
        lines.push_back(finish_line(partial_));
        partial_.clear();
        skipping_ = true;
      }
    }
    if (nl == std::string_view::npos) return;
    if (!skipping_) lines.push_back(finish_line(partial_));
    partial_.clear();
    skipping_ = false;
    data.remove_prefix(nl + 1);
  }
}

std::expected<std::vector<std::string>, std::string> KernelLogReader::read_new() {
  if (fd_ < 0) {
    // The log was missing at start: everything in it when it appears is new.
    if (auto r = open_at(/*at_end=*/false); !r) return std::unexpected(r.error());
  }
  if (is_kmsg_) return read_records();

  std::vector<std::string> lines;
  // A regular file: rotated (new inode) or truncated means start from its beginning.
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return lines;  // gone for now (rotation in progress)
  if (st.st_ino != inode_) {
    if (auto r = open_at(false); !r) return std::unexpected(r.error());
  } else if (st.st_size < offset_) {
    offset_ = 0;
    partial_.clear();
    skipping_ = false;
  }
  char buf[65536];
  for (std::size_t read = 0; read < kMaxBytesPerRead;) {
    ssize_t n = ::pread(fd_, buf, std::min(sizeof(buf), kMaxBytesPerRead - read), offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && read == 0) return std::unexpected(path_.string() + ": read: " + std::strerror(errno));
    if (n < 0) break;  // the lines read so far now; the error again on the next call
    if (n == 0) break;
    offset_ += n;
    read += static_cast<std::size_t>(n);
    split(std::string_view(buf, static_cast<std::size_t>(n)), lines);
  }
  return lines;
}

}  // namespace ar::healthd
