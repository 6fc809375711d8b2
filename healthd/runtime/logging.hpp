// Where healthd's log goes. Under systemd (stderr is the journal's stream: $JOURNAL_STREAM names its
// device and inode) each line goes to journald with its priority (spdlog's systemd sink: warn ->
// LOG_WARNING, error -> LOG_ERR, ...), so `journalctl -u healthd -p warning` finds the warnings and
// journald adds the time. Anywhere else (a terminal, a test cluster's log file) to stderr with a
// timestamp and the level, so that `healthd >/dev/null` still shows a config error.
#pragma once

#include <string>

namespace ar::healthd {

enum class LogTarget { journal, stderr_text };

// The target for this process: the journal when $JOURNAL_STREAM matches stderr's device:inode (as
// systemd sets it for a unit whose stderr is the journal), else stderr.
LogTarget detect_log_target();

// Replaces the default logger with one writing to `target`. Called once, before any thread starts.
void setup_logging(LogTarget target);

}  // namespace ar::healthd
