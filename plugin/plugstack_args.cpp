#include "plugstack_args.hpp"

#include <algorithm>
#include <charconv>

#include "auto_resume/protocol.hpp"

namespace ar::plugin {
namespace {

std::expected<std::chrono::milliseconds, std::string> parse_millis(const std::string& key, const std::string& value) {
  long ms = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (ec != std::errc() || end != value.data() + value.size() || ms < 1 || ms > 60000)
    return std::unexpected("plugstack argument " + key + "=" + value + ": expected milliseconds from 1 to 60000");
  return std::chrono::milliseconds(ms);
}

}  // namespace

std::expected<PlugstackArgs, std::string> parse_plugstack_args(const std::vector<std::string>& words) {
  PlugstackArgs args;
  for (const auto& word : words) {
    auto eq = word.find('=');
    if (eq == std::string::npos)
      return std::unexpected("plugstack argument '" + word + "' is not key=value");
    std::string key = word.substr(0, eq);
    std::string value = word.substr(eq + 1);
    if (key == "socket") {
      if (value.empty() || value[0] != '/')
        return std::unexpected("plugstack argument socket=" + value + ": expected an absolute path");
      if (auto e = expand_socket_template(value, "node"); !e) return std::unexpected(e.error());
      args.socket_template = value;
    } else if (key == "timeout_ms") {
      auto ms = parse_millis(key, value);
      if (!ms) return std::unexpected(ms.error());
      args.timeout = *ms;
    } else if (key == "step_budget_ms") {
      auto ms = parse_millis(key, value);
      if (!ms) return std::unexpected(ms.error());
      args.step_budget = *ms;
    } else {
      return std::unexpected("unknown plugstack argument '" + key + "' (known: socket, timeout_ms, step_budget_ms)");
    }
  }
  return args;
}

bool safe_node_name(std::string_view node) {
  if (node.empty() || node.size() > 255 || node == "." || node == "..") return false;
  return std::all_of(node.begin(), node.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

std::expected<std::string, std::string> expand_socket_template(const std::string& tmpl, const std::string& node) {
  if (tmpl.find("%n") != std::string::npos && !safe_node_name(node))
    return std::unexpected("node name " + proto::quote_client_text(node) +
                           " is not one a socket path may hold (letters, digits, '-', '_', '.')");
  std::string out;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '%') {
      out += tmpl[i];
      continue;
    }
    if (i + 1 == tmpl.size()) return std::unexpected("socket template '" + tmpl + "' ends with a lone '%'");
    char c = tmpl[++i];
    if (c == 'n') out += node;
    else if (c == '%') out += '%';
    else return std::unexpected("socket template '" + tmpl + "': unknown escape '%" + std::string(1, c) + "' (known: %n, %%)");
  }
  return out;
}

}  // namespace ar::plugin
