#include "background_writer.hpp"

#include <spdlog/spdlog.h>

#include "state/atomic_file.hpp"

namespace ar::healthd {

BackgroundWriter::BackgroundWriter(std::filesystem::path file, std::chrono::milliseconds retry_every)
    : file_(std::move(file)), retry_every_(retry_every) {
  thread_ = std::thread([this] { run(); });
}

BackgroundWriter::~BackgroundWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void BackgroundWriter::submit(std::string text) {
  submit(Producer([t = std::move(text)] { return t; }));
}

void BackgroundWriter::submit(Producer make_text) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::move(make_text);
  }
  wake_.notify_all();
}

void BackgroundWriter::flush() {
  std::unique_lock lock(mutex_);
  const std::uint64_t start = tries_;
  idle_.wait(lock, [&] { return (!pending_ && !writing_) || (failing_ && !writing_ && tries_ > start); });
}

bool BackgroundWriter::current() const {
  std::lock_guard lock(mutex_);
  return !pending_ && !writing_;
}

void BackgroundWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (failing_ && !stopping_)
      wake_.wait_for(lock, retry_every_, [this] { return stopping_; });  // the retry, or a newer text
    else
      wake_.wait(lock, [this] { return pending_ || stopping_; });
    if (pending_) {
      Producer make = pending_;
      pending_ = nullptr;
      writing_ = true;
      lock.unlock();
      std::expected<void, std::string> r;
      std::string text;
      try {
        text = make();
        r = write_file_atomically(file_, text);
      } catch (const std::exception& e) {
        r = std::unexpected(file_.string() + ": serialising: " + e.what());
      }
      lock.lock();
      writing_ = false;
      ++tries_;
      if (!r) {
        if (!failing_) spdlog::error("state: {}; retrying every {} ms", r.error(), retry_every_.count());
        failing_ = true;
        // Keep what failed unless something newer came meanwhile.
        if (!pending_) pending_ = [t = std::move(text)] { return t; };
      } else if (failing_) {
        failing_ = false;
        spdlog::info("state: {} written again", file_.string());
      }
      idle_.notify_all();
      if (stopping_ && failing_) return;  // one try at shutdown; the journal holds what matters
      continue;  // something may have come in meanwhile, stopping or not
    }
    if (stopping_) return;
  }
}

}  // namespace ar::healthd
