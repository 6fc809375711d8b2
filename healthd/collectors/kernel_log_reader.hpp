// Reads the kernel log as it grows: /dev/kmsg on a host, or any text file (tests, or a host whose
// kernel messages are forwarded to a file). Only lines written after open() count: old lines were
// handled (or not) before this daemon started, and replaying them would drain nodes for stale faults.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <vector>

namespace ar::healthd {

class KernelLogReader {
 public:
  explicit KernelLogReader(std::filesystem::path path) : path_(std::move(path)) {}
  ~KernelLogReader();
  KernelLogReader(const KernelLogReader&) = delete;
  KernelLogReader& operator=(const KernelLogReader&) = delete;

  // Opens the log and skips what is already there. A missing file is an error naming it; read_new()
  // retries opening it, so a log that appears later (rotation, late mount) is picked up.
  std::expected<void, std::string> open();

  // The complete lines written since the last call (a partial last line waits for its newline).
  // /dev/kmsg records are returned as their message text, without the "pri,seq,ts,flags;" prefix.
  std::expected<std::vector<std::string>, std::string> read_new();

  const std::filesystem::path& path() const { return path_; }

 private:
  std::expected<void, std::string> open_at(bool at_end);

  std::filesystem::path path_;
  int fd_ = -1;
  bool is_kmsg_ = false;
  off_t offset_ = 0;
  ino_t inode_ = 0;
  std::string partial_;
};

}  // namespace ar::healthd
