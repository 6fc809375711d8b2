// Keeps the job registry on disk without ever making the event loop wait for the disk.
//
// The registry is saved (whole) at most every 100 ms, not once per message, and the write and its
// fsync happen on a writer thread: the plugin waits for each reply (within its timeout), and a burst
// of hundreds of steps must not queue behind disk writes. The event loop only serialises; when that
// takes long (a big registry under sustained load) the next save waits ten times as long, so it never
// takes more than about a tenth of the loop. A crash loses at most that much of the step records;
// everything Slurm is asked to do goes through the journal, which is written at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>

#include <asio.hpp>

#include "state/background_writer.hpp"
#include "state/job_registry.hpp"

namespace ar::healthd {

class RegistrySaver {
 public:
  // `jobs_here` is kept at the number of jobs running here at each save (read by the engine's checks).
  RegistrySaver(asio::io_context& io, JobRegistry& registry, std::filesystem::path file,
                std::shared_ptr<std::atomic<std::size_t>> jobs_here);

  // The registry changed: saved within the flush delay (event loop only).
  void changed();
  // Saves now and waits for the writer (at shutdown).
  void save_and_flush();

 private:
  void save();

  JobRegistry& registry_;
  BackgroundWriter writer_;
  asio::steady_timer flush_timer_;
  bool dirty_ = false;
  std::chrono::milliseconds flush_delay_{100};
  std::shared_ptr<std::atomic<std::size_t>> jobs_here_;
};

}  // namespace ar::healthd
