// The one rule healthd waits by before trying again (a Slurm action, a webhook delivery): `first` after
// the first failure, doubled after each one, at most `cap`, less a random part of up to half. The random
// part is what matters at scale: the daemons of a thousand nodes that failed at the same moment
// (slurmctld restarting, an endpoint down) would otherwise all try again in the same second, every time.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace ar::healthd {

inline std::chrono::milliseconds backoff_delay(std::uint32_t failures, std::chrono::milliseconds first,
                                               std::chrono::milliseconds cap, std::minstd_rand& rng) {
  auto full = std::min(first, cap);
  for (std::uint32_t i = 1; i < failures && full < cap; ++i) full = std::min(full * 2, cap);
  std::uniform_int_distribution<std::int64_t> half(0, full.count() / 2);
  return full - std::chrono::milliseconds(half(rng));
}

// A generator seeded apart on each daemon (and each start of it).
inline std::minstd_rand backoff_rng() { return std::minstd_rand(std::random_device{}()); }

}  // namespace ar::healthd
