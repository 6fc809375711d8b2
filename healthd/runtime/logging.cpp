#include "runtime/logging.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

namespace ar::healthd {

LogTarget detect_log_target() {
  // systemd.exec(5): JOURNAL_STREAM=DEV:INODE of the stream stdout/stderr are connected to; a
  // process whose stderr was redirected since (by a wrapper, by hand) no longer matches it.
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr || *stream == '\0') return LogTarget::stderr_text;
  struct stat st{};
  if (::fstat(STDERR_FILENO, &st) != 0) return LogTarget::stderr_text;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return LogTarget::stderr_text;
  return dev == static_cast<unsigned long long>(st.st_dev) && ino == static_cast<unsigned long long>(st.st_ino)
             ? LogTarget::journal
             : LogTarget::stderr_text;
}

void setup_logging(LogTarget target) {
  std::shared_ptr<spdlog::logger> logger;
  if (target == LogTarget::journal) {
    // The message alone: journald records the time, the priority and the identifier itself.
    logger = std::make_shared<spdlog::logger>("healthd", std::make_shared<spdlog::sinks::systemd_sink_mt>("healthd"));
  } else {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic);
    logger = std::make_shared<spdlog::logger>("healthd", std::move(sink));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::get_level());
  // A warning or an error reaches the file (or the journal) at once, not at the next buffer flush.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace ar::healthd
