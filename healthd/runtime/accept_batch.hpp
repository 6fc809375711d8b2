// Taking waiting connections off a listening socket, for the servers (the socket server, the
// metrics endpoint): accept4, so each connection is close-on-exec and non-blocking from its first
// moment (asio's accept is not), and a bounded batch per wake-up, so that a flood of connects leaves
// turns for the sessions already open.
#pragma once

#include <functional>

namespace ar::healthd {

struct AcceptBatch {
  enum class Stop {
    drained,     // nothing more waits: any shortage (of descriptors, of memory) is over
    batch_full,  // `batch` taken; more may wait for the next turn
    failed,      // accept4 failed with `error` (EMFILE, ENOBUFS, ...): back off before the next try
  };
  Stop stop = Stop::drained;
  int error = 0;
  int taken = 0;
};

// Accepts up to `batch` connections from `listener`, handing each descriptor to `admit`, which owns
// it from then on. A client that gave up before its turn (ECONNABORTED) or a signal (EINTR) is
// skipped, not a failure.
AcceptBatch accept_batch(int listener, int batch, const std::function<void(int fd)>& admit);

}  // namespace ar::healthd
