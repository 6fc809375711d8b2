#include "host_list.hpp"

#include "auto_resume/slurm_series.hpp"

namespace ar::plugin {

bool host_list_holds(const std::string& list, const std::string& node) {
  return ar::slurm_series::HostList(list).holds(node);
}

std::optional<std::string> host_at(const std::string& list, std::uint32_t node_id) {
  ar::slurm_series::HostList hosts(list);
  for (std::uint32_t i = 0; i < node_id; ++i)
    if (!hosts.shift()) return std::nullopt;
  return hosts.shift();
}

}  // namespace ar::plugin
