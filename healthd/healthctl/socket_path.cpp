#include "socket_path.hpp"

#include <cctype>
#include <climits>

#include <unistd.h>

#include "text.hpp"

namespace ar::healthctl {

namespace {

// A node name becomes part of a path: only what Slurm node names are made of, no "/" or "..".
bool is_node_name(const std::string& n) {
  if (n.empty() || n.size() > 64 || n.front() == '.' || n.front() == '-') return false;
  for (unsigned char c : n)
    if (!(std::isalnum(c) || c == '-' || c == '_' || c == '.')) return false;
  return n.find("..") == std::string::npos;
}

}  // namespace

std::expected<std::string, std::string> choose_socket(const SocketChoice& c) {
  if (c.socket_flag) return *c.socket_flag;
  if (c.node_flag) {
    const auto& node = *c.node_flag;
    if (!is_node_name(node))
      return std::unexpected("--node " + printable(node) + ": not a node name (letters, digits, '-', '_', '.')");
    if (c.template_env != nullptr && *c.template_env != '\0') {
      std::string path = c.template_env;
      if (path.find("%n") == std::string::npos)
        return std::unexpected("HEALTHD_SOCKET_TEMPLATE=" + printable(path) + " has no %n for the node name");
      for (auto at = path.find("%n"); at != std::string::npos; at = path.find("%n", at + node.size()))
        path.replace(at, 2, node);
      return path;
    }
    if (node == c.short_hostname) return std::string(kDefaultSocket);
    return std::unexpected("--node " + node + ": this host is " + printable(c.short_hostname) +
                           ", and with no HEALTHD_SOCKET_TEMPLATE (such as /run/healthd/%n.sock) there is no telling "
                           "where the daemon of another node listens");
  }
  if (c.socket_env != nullptr && *c.socket_env != '\0') return std::string(c.socket_env);
  return std::string(kDefaultSocket);
}

std::string short_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  std::string s(name);
  if (auto dot = s.find('.'); dot != std::string::npos) s.resize(dot);
  return s;
}

}  // namespace ar::healthctl
