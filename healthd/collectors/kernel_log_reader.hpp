// Reads the kernel log as it grows: /dev/kmsg on a host, or a text file the kernel's messages are
// forwarded to (tests; a site that forwards them). Only records written after open() count: old ones
// were handled (or not) before this daemon started, and replaying them would drain nodes for stale faults.
//
// It hands over records, not lines: each with the priority the kernel gave it (level and facility),
// since the text alone says nothing about who wrote it. The kernel reports a crash of any program
// with the crashing file's name in the text, at KERN_INFO ("a.out[1234]: segfault at 0 ... in
// NVRM: Xid (PCI:...): 79, ...[55d0+1000]"), and anything user space writes to /dev/kmsg has the
// facility LOG_USER (the kernel forces a facility of at least 1 there). The checks decide from the
// facility and level whether a record can be a driver's own (checks/kernel_log/kernel_log_check.hpp).
//
// /dev/kmsg: each read() is one record, "PRI,SEQ,TS,FLAGS;MESSAGE\n" followed by " KEY=VALUE"
// continuation lines (dropped). A file: one record a line, which must carry its priority, either
// the same "PRI,SEQ,TS,FLAGS;" prefix (a copy of /dev/kmsg) or a syslog "<PRI>" (what `dmesg -r`
// prints, "<4>[ 1234.567890] NVRM: ...", and rsyslog's %pri%). A line with neither has no known
// origin: it is never a record, only counted (and said once in the log).
//
// Whatever the kernel (or whoever writes the file) puts there, the reader's memory and each call's
// work are bounded: a line longer than kMaxLineBytes is taken cut (at a code point) as soon as that
// much of it is there, and the rest of it is skipped up to its newline; one call reads at most
// kMaxBytesPerRead bytes or kMaxRecordsPerRead records and leaves the rest for the next. Texts come
// back sanitized (text/text.hpp): valid UTF-8 without control characters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace ar::healthd {

// Syslog's levels (KERN_EMERG 0 .. KERN_DEBUG 7) and the kernel's own facility.
inline constexpr int kLevelEmerg = 0;
inline constexpr int kLevelErr = 3;
inline constexpr int kLevelWarning = 4;
inline constexpr int kLevelNotice = 5;
inline constexpr int kLevelInfo = 6;
inline constexpr int kLevelDebug = 7;
inline constexpr int kFacilityKernel = 0;
inline constexpr int kFacilityUser = 1;

// "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" (also "error", "warn",
// "critical", "emergency", "panic", as syslog and logger(1) accept them), or nullopt.
std::optional<int> parse_log_level(std::string_view name);
// The level's name as above ("err" for 3); "level N" outside 0..7.
std::string log_level_name(int level);

struct KernelRecord {
  int level = kLevelDebug;        // 0 (emerg) .. 7 (debug)
  int facility = kFacilityUser;   // 0: the kernel itself; 1: user space (a /dev/kmsg write); ...
  std::uint64_t seq = 0;          // /dev/kmsg's sequence number (from a file: the prefix's, or 0)
  std::string text;               // the message, sanitized, at most kMaxLineBytes

  bool from_kernel() const { return facility == kFacilityKernel; }
};

// The record a /dev/kmsg read returned ("PRI,SEQ,TS,FLAGS;MESSAGE\n KEY=VALUE..."), or nullopt when
// its prefix is not one (then nothing about its origin is known).
std::optional<KernelRecord> parse_kmsg_record(std::string_view record);
// The record one line of a file holds: "<PRI>MESSAGE" (a "[ seconds.micros] " after the priority,
// as dmesg -r prints it, is not part of the message) or the /dev/kmsg form; nullopt when the line
// has neither prefix.
std::optional<KernelRecord> parse_log_line(std::string_view line);

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

  // The records written since the last call (a file's partial last line waits for its newline, or
  // until it is kMaxLineBytes long).
  std::expected<std::vector<KernelRecord>, std::string> read_new();

  const std::filesystem::path& path() const { return path_; }

  // What was read and could not be a record: lines of a file without a priority, /dev/kmsg records
  // whose prefix is not one. Counted since this reader was made (or swapped in).
  std::uint64_t without_priority() const { return without_priority_; }
  // The sequence number of the last record in the /dev/kmsg form read (0: none yet).
  std::uint64_t last_seq() const { return last_seq_; }

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
    std::swap(after_kmsg_line_, other.after_kmsg_line_);
    std::swap(without_priority_, other.without_priority_);
    std::swap(last_seq_, other.last_seq_);
    std::swap(said_without_priority_, other.said_without_priority_);
  }

 private:
  std::expected<void, std::string> open_at(bool at_end);
  std::vector<KernelRecord> read_records();
  // Splits file bytes into lines, keeping a line's head and skipping its overlong rest.
  void split(std::string_view data, std::vector<KernelRecord>& records);
  // One complete line of a file (or the cut head of an overlong one).
  void take_line(std::string_view line, std::vector<KernelRecord>& records);
  void count_without_priority();

  std::filesystem::path path_;
  int fd_ = -1;
  bool is_kmsg_ = false;
  off_t offset_ = 0;
  ino_t inode_ = 0;
  std::string partial_;     // the last line's start, at most kMaxLineBytes
  bool skipping_ = false;   // the current line was taken cut: its rest is dropped up to the newline
  bool after_kmsg_line_ = false;  // the line before was in the /dev/kmsg form: " KEY=VALUE" lines follow it
  std::uint64_t without_priority_ = 0;
  std::uint64_t last_seq_ = 0;
  bool said_without_priority_ = false;
};

}  // namespace ar::healthd
