// Which daemon healthctl talks to. In order:
//   --socket PATH                  that socket;
//   --node NAME                    that node's daemon on this host: $HEALTHD_SOCKET_TEMPLATE with %n
//                                  replaced by NAME when it is set (a host running several slurmd,
//                                  one healthd each, as the plugin's socket= template does), else
//                                  the default socket when NAME is this host's short name; else an
//                                  error (no way to know where that node's daemon listens);
//   $HEALTHD_SOCKET                that socket;
//   /run/healthd/healthd.sock      the packaged default.
#pragma once

#include <expected>
#include <optional>
#include <string>

namespace ar::healthctl {

inline constexpr const char* kDefaultSocket = "/run/healthd/healthd.sock";

struct SocketChoice {
  std::optional<std::string> socket_flag;  // --socket
  std::optional<std::string> node_flag;    // --node
  const char* socket_env = nullptr;        // $HEALTHD_SOCKET
  const char* template_env = nullptr;      // $HEALTHD_SOCKET_TEMPLATE
  std::string short_hostname;              // this host's name up to the first dot
};

// The socket path, or why none can be chosen (a usage error).
std::expected<std::string, std::string> choose_socket(const SocketChoice& c);

// This host's name up to its first dot ("" when gethostname fails).
std::string short_hostname();

}  // namespace ar::healthctl
