#include "telemetry/metrics_textfile.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

namespace ar::healthd {
namespace {

std::string textfile_errno() { return std::strerror(errno); }

}  // namespace

std::expected<void, std::string> write_textfile(const std::filesystem::path& file, const std::string& text) {
  // node_exporter reads only *.prom: "healthd.prom.tmp" is never read half written.
  const std::string tmp = file.string() + ".tmp";
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return std::unexpected(tmp + ": cannot remove the old temp file: " + textfile_errno());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(tmp + ": cannot create: " + textfile_errno());
  // Whatever healthd's umask: node_exporter's own user reads the file. The metrics hold nothing
  // secret (the node's name, fault codes, GPU ids), as node_exporter's own do.
  std::string failed;
  if (::fchmod(fd, 0644) != 0) failed = "chmod: " + textfile_errno();
  for (std::size_t done = 0; failed.empty() && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failed = "write: " + textfile_errno();
    else done += static_cast<std::size_t>(n);
  }
  // No fsync: the file is rewritten every interval, and what a crash leaves (the old file or the new
  // one, whole, thanks to the rename) is stale either way.
  if (::close(fd) != 0 && failed.empty()) failed = "close: " + textfile_errno();
  if (!failed.empty()) {
    ::unlink(tmp.c_str());
    return std::unexpected(tmp + ": " + failed);
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const auto why = textfile_errno();
    ::unlink(tmp.c_str());
    return std::unexpected(file.string() + ": rename: " + why);
  }
  return {};
}

TextfileWriter::TextfileWriter(std::filesystem::path file, std::chrono::seconds interval, std::function<std::string()> text)
    : file_(std::move(file)), interval_(interval), text_(std::move(text)), thread_([this] { loop(); }) {}

TextfileWriter::~TextfileWriter() { stop(); }

void TextfileWriter::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TextfileWriter::loop() {
  for (;;) {
    write_once();
    std::unique_lock lock(mutex_);
    if (stopping_) return;
    wake_.wait_for(lock, interval_, [&] { return stopping_; });
    if (stopping_) {
      lock.unlock();
      write_once();  // the last state, as stop() promises
      return;
    }
  }
}

void TextfileWriter::write_once() {
  // Nothing thrown may end this thread (std::terminate would end healthd): a text that cannot be
  // made (out of memory) is a failed write like any other.
  std::expected<void, std::string> written;
  try {
    written = write_textfile(file_, text_());
  } catch (const std::exception& e) {
    written = std::unexpected(std::string("making the text: ") + e.what());
  }
  const auto now = std::chrono::steady_clock::now();
  if (written) {
    if (failing_) spdlog::info("metrics: textfile {} written again ({} failed writes before)", file_.string(), failures_);
    failing_ = false;
    failures_ = 0;
    return;
  }
  ++failures_;
  // A directory that is gone stays gone: one line per kFailureLogEvery, not one per interval.
  if (!failing_ || now - last_logged_ >= kFailureLogEvery) {
    spdlog::warn("metrics: textfile: {} ({} failed writes so far; next in {} s)", written.error(), failures_,
                 interval_.count());
    last_logged_ = now;
  }
  failing_ = true;
}

}  // namespace ar::healthd
