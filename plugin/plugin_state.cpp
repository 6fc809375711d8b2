#include "plugin_state.hpp"

extern "C" {
#include <slurm/spank.h>
}

namespace ar::plugin {

PluginState& state() {
  static PluginState s;
  return s;
}

void reset_state() { state() = PluginState{}; }

void log_error(const std::string& what) { slurm_error("%s%s", kPrefix, what.c_str()); }

}  // namespace ar::plugin
