// How much of the daemon a client may hold, and for how long ([server] in the config). A plain
// header so the config can carry these without pulling in asio.
#pragma once

#include <chrono>
#include <cstdint>

namespace ar::healthd {

struct ServerLimits {
  // Open connections of every client together. Each one costs an fd and a reply buffer; past the
  // cap a new connection is answered `busy` and closed at once.
  std::uint32_t max_connections = 1024;
  // Of those, the slots only root (slurmstepd's lifecycle messages, the admin) may take: however
  // many unprivileged clients connect, a task_exit still finds a free slot.
  std::uint32_t root_reserved = 256;
  // Open connections of one unprivileged uid (root is bounded by max_connections alone).
  std::uint32_t max_connections_per_uid = 32;
  // A connection on which no byte arrived for this long is closed (counted from the last byte, so
  // a slow but steady writer is never cut)...
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  // ...and one message must be complete this long after its first byte: a trickle of one byte a
  // minute cannot keep a connection forever. Past it the client is told `timeout` before the close.
  std::chrono::milliseconds message_timeout{std::chrono::seconds(30)};
  // A reply the client does not read within this long: the connection is dropped.
  std::chrono::milliseconds write_timeout{std::chrono::seconds(10)};
};

}  // namespace ar::healthd
