// Slurm host list expressions ("n[1-3],gpu7"), read with libslurm's own parser (through the series
// adapter, include/auto_resume/slurm_series.hpp). No slurmctld is asked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ar::plugin {

// Whether `node` is one of the nodes of the host list expression `list`.
bool host_list_holds(const std::string& list, const std::string& node);

// This node's name for the step: the entry at `node_id` of the host list `list` (nullopt when the
// list is bad or too short).
std::optional<std::string> host_at(const std::string& list, std::uint32_t node_id);

}  // namespace ar::plugin
