// What a node of a given (EC2) instance type must have (config/profiles.hpp finds the profile).
#pragma once

#include <cstdint>
#include <string>

namespace ar::healthd {

struct InstanceProfile {
  std::string name;
  std::uint32_t gpus = 0;
  std::uint32_t nvlinks_per_gpu = 0;  // 0: not known / no NVLink
  std::uint32_t neuron_devices = 0;
  std::uint32_t efa_devices = 0;      // one EFA per network card, as AWS recommends for these types
  std::uint32_t cpus = 0;             // vCPUs; 0: not judged
  double memory_gib = 0;              // nominal; 0: not judged
  std::string source;
};

}  // namespace ar::healthd
