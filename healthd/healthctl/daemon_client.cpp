#include "daemon_client.hpp"

#include "auto_resume/unix_client.hpp"
#include "text.hpp"

namespace ar::healthctl {

std::string CallError::describe(const std::string& socket) const {
  switch (outcome()) {
    case Outcome::refused: return "refused: " + message + " (" + code + ")";
    case Outcome::conflict: return "not done: " + message;
    default: break;
  }
  if (answered) return "healthd at " + printable(socket) + " answered with an error: " + code + ": " + message;
  return "healthd at " + printable(socket) + " is not answering: " + message;
}

std::expected<nlohmann::json, CallError> call_daemon(const std::string& socket, const nlohmann::json& request,
                                                     std::chrono::milliseconds timeout) {
  const auto deadline = UnixClient::Clock::now() + timeout;
  auto client = UnixClient::connect(socket, deadline);
  if (!client) return std::unexpected(CallError{false, {}, printable(client.error())});
  auto line = client->request(proto::encode(request), deadline);
  if (!line) return std::unexpected(CallError{false, {}, printable(line.error())});
  // A line that is no reply at all (not JSON, no "ok") is no answer either: only a well-formed
  // error reply is the daemon saying no.
  const auto parsed = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("ok") || !parsed["ok"].is_boolean())
    return std::unexpected(CallError{false, {}, "its reply is not a protocol reply"});
  auto reply = proto::parse_reply(*line);
  if (!reply) return std::unexpected(CallError{true, printable(reply.error().code), printable(reply.error().message)});
  return *reply;
}

}  // namespace ar::healthctl
