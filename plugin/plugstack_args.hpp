// Arguments given to the plugin on its plugstack.conf line, as key=value words:
//   optional /usr/lib/slurm/auto_resume.so socket=/run/healthd/%n.sock timeout_ms=200
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <vector>

namespace ar::plugin {

struct PlugstackArgs {
  // Where healthd listens. %n is replaced by the Slurm node name (several slurmd may share one host),
  // %% by a literal '%'.
  std::string socket_template = "/run/healthd/healthd.sock";
  // Longest wait for one message to the daemon (connect, send, reply).
  std::chrono::milliseconds timeout{200};
  // Longest total wait for all messages of one step; once spent, the step reports nothing more.
  std::chrono::milliseconds step_budget{500};
};

// Parses the words after the plugin path. An unknown key or a bad value is an error naming it.
std::expected<PlugstackArgs, std::string> parse_plugstack_args(const std::vector<std::string>& words);

// Expands %n and %% in a socket template. An unknown %-escape is an error, and so is a node name that
// could lead the path elsewhere (root's slurmstepd connects to it): only a Slurm node name's letters,
// digits, '-', '_' and '.' are taken, never "." or ".." alone, at most 255 bytes.
std::expected<std::string, std::string> expand_socket_template(const std::string& tmpl, const std::string& node);

// Whether `node` is a name expand_socket_template takes.
bool safe_node_name(std::string_view node);

}  // namespace ar::plugin
