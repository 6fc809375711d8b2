// Reads the kernel log as it grows: /dev/kmsg on a host, or any text file (tests, or a host whose
// kernel messages are forwarded to a file). Only lines written after open() count: old lines were
// handled (or not) before this daemon started, and replaying them would drain nodes for stale faults.
//
// Whatever the kernel (or whoever writes the file) puts there, the reader's memory and each call's
// work are bounded: a line longer than kMaxLineBytes is returned cut (at a code point) as soon as
// that much of it is there, and the rest of it is skipped up to its newline; one call reads at most
// kMaxBytesPerRead bytes or kMaxRecordsPerRead records and leaves the rest for the next. Lines come
// back sanitized (text/text.hpp): valid UTF-8 without control characters.
#pragma once

#include <cstddef>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

namespace ar::healthd {

class KernelLogReader {
 public:
  // A kernel message is at most 1 KiB (printk's limit); nothing a rule needs lies further in.
  static constexpr std::size_t kMaxLineBytes = 4096;
  static constexpr std::size_t kMaxBytesPerRead = 1024 * 1024;
  static constexpr std::size_t kMaxRecordsPerRead = 1024;

  explicit KernelLogReader(std::filesystem::path path) : path_(std::move(path)) {}
  ~KernelLogReader();
  KernelLogReader(const KernelLogReader&) = delete;
  KernelLogReader& operator=(const KernelLogReader&) = delete;

  // Opens the log and skips what is already there. A missing file is an error naming it; read_new()
  // retries opening it, so a log that appears later (rotation, late mount) is picked up.
  std::expected<void, std::string> open();

  // The complete lines written since the last call (a partial last line waits for its newline, or
  // until it is kMaxLineBytes long). /dev/kmsg records are returned as their message text, without
  // the "pri,seq,ts,flags;" prefix.
  std::expected<std::vector<std::string>, std::string> read_new();

  const std::filesystem::path& path() const { return path_; }

  // Exchanges two readers of the same log, positions and all (a check rebuilt at reload takes over
  // the old check's position, so no line written meanwhile is skipped).
  void swap(KernelLogReader& other) noexcept {
    std::swap(path_, other.path_);
    std::swap(fd_, other.fd_);
    std::swap(is_kmsg_, other.is_kmsg_);
    std::swap(offset_, other.offset_);
    std::swap(inode_, other.inode_);
    std::swap(partial_, other.partial_);
    std::swap(skipping_, other.skipping_);
  }

 private:
  std::expected<void, std::string> open_at(bool at_end);
  std::vector<std::string> read_records();
  // Splits file bytes into lines, keeping a line's head and skipping its overlong rest.
  void split(std::string_view data, std::vector<std::string>& lines);

  std::filesystem::path path_;
  int fd_ = -1;
  bool is_kmsg_ = false;
  off_t offset_ = 0;
  ino_t inode_ = 0;
  std::string partial_;     // the last line's start, at most kMaxLineBytes
  bool skipping_ = false;   // the current line was returned cut: its rest is dropped up to the newline
};

}  // namespace ar::healthd
