#include "background_writer.hpp"

#include <spdlog/spdlog.h>

#include "state/atomic_file.hpp"

namespace ar::healthd {

BackgroundWriter::BackgroundWriter(std::filesystem::path file) : file_(std::move(file)) {
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
  {
    std::lock_guard lock(mutex_);
    pending_ = std::move(text);
  }
  wake_.notify_all();
}

void BackgroundWriter::flush() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return !pending_ && !writing_; });
}

void BackgroundWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return pending_ || stopping_; });
    if (pending_) {
      std::string text = std::move(*pending_);
      pending_.reset();
      writing_ = true;
      lock.unlock();
      if (auto r = write_file_atomically(file_, text); !r) spdlog::error("state: {}", r.error());
      lock.lock();
      writing_ = false;
      idle_.notify_all();
      continue;  // something may have come in meanwhile, stopping or not
    }
    if (stopping_) return;
  }
}

}  // namespace ar::healthd
