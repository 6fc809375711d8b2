#include "kernel_log_reader.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ar::healthd {

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
  if (is_kmsg_) {
    if (at_end) ::lseek(fd_, 0, SEEK_END);  // /dev/kmsg: SEEK_END means "after the last record"
    offset_ = 0;
  } else {
    offset_ = at_end ? st.st_size : 0;
  }
  return {};
}

std::expected<std::vector<std::string>, std::string> KernelLogReader::read_new() {
  std::vector<std::string> lines;
  if (fd_ < 0) {
    // The log was missing at start: everything in it when it appears is new.
    if (auto r = open_at(/*at_end=*/false); !r) return std::unexpected(r.error());
  }
  if (is_kmsg_) {
    char record[8192];
    for (;;) {
      ssize_t n = ::read(fd_, record, sizeof(record));
      if (n < 0 && errno == EPIPE) continue;  // records were overwritten before we read them: skip on
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::string text(record, static_cast<std::size_t>(n));
      if (auto semi = text.find(';'); semi != std::string::npos) text.erase(0, semi + 1);
      if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);  // continuation lines follow
      lines.push_back(std::move(text));
    }
    return lines;
  }

  // A regular file: rotated (new inode) or truncated means start from its beginning.
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return lines;  // gone for now (rotation in progress)
  if (st.st_ino != inode_) {
    if (auto r = open_at(false); !r) return std::unexpected(r.error());
  } else if (st.st_size < offset_) {
    offset_ = 0;
    partial_.clear();
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::pread(fd_, buf, sizeof(buf), offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(path_.string() + ": read: " + std::strerror(errno));
    if (n == 0) break;
    offset_ += n;
    partial_.append(buf, static_cast<std::size_t>(n));
  }
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(partial_.substr(start, nl - start));
  partial_.erase(0, start);
  return lines;
}

}  // namespace ar::healthd
