#include "accept_batch.hpp"

#include <cerrno>

#include <sys/socket.h>

namespace ar::healthd {

AcceptBatch accept_batch(int listener, int batch, const std::function<void(int fd)>& admit) {
  AcceptBatch out;
  out.stop = AcceptBatch::Stop::batch_full;
  while (out.taken < batch) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      ++out.taken;
      admit(fd);
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      out.stop = AcceptBatch::Stop::drained;
      return out;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;  // that client gave up; the others wait
    out.stop = AcceptBatch::Stop::failed;
    out.error = errno;
    return out;
  }
  return out;
}

}  // namespace ar::healthd
