#include "registry_saver.hpp"

#include <algorithm>

namespace ar::healthd {
namespace {
std::size_t count_running(const JobRegistry& registry) {
  std::size_t n = 0;
  for (const auto& [id, job] : registry.jobs()) n += job.running() ? 1 : 0;
  return n;
}
}  // namespace

RegistrySaver::RegistrySaver(asio::io_context& io, JobRegistry& registry, std::filesystem::path file,
                             std::shared_ptr<std::atomic<std::size_t>> jobs_here)
    : registry_(registry), writer_(std::move(file)), flush_timer_(io), jobs_here_(std::move(jobs_here)) {
  jobs_here_->store(count_running(registry_));
}

void RegistrySaver::changed() {
  if (dirty_) return;
  dirty_ = true;
  flush_timer_.expires_after(flush_delay_);
  flush_timer_.async_wait([this](const asio::error_code& e) {
    if (!e) save();
  });
}

void RegistrySaver::save() {
  dirty_ = false;
  const auto t0 = std::chrono::steady_clock::now();
  writer_.submit(registry_.serialize());
  jobs_here_->store(count_running(registry_));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  flush_delay_ = std::clamp(10 * took, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
}

void RegistrySaver::save_and_flush() {
  flush_timer_.cancel();
  save();  // whatever changed since the last write
  writer_.flush();
}

}  // namespace ar::healthd
