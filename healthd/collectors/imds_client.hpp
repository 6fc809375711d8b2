// EC2 instance metadata (IMDSv2) over HTTP with libcurl: a session token first (PUT
// /latest/api/token), then GETs carrying it. Short timeouts: IMDS answers in milliseconds or not at
// all (off EC2, or blocked by a hop limit). Blocking; callers run it off the event loop.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <string>

namespace ar::healthd {

class ImdsClient {
 public:
  // `endpoint`: "http://169.254.169.254" (no trailing slash; a path prefix is allowed, for tests).
  ImdsClient(std::string endpoint, std::chrono::milliseconds timeout);

  // The body of GET `path` ("/latest/meta-data/..."), sanitized (text/text.hpp: valid UTF-8, no
  // control characters; tabs and newlines become spaces); nullopt on 404 (nothing there). Errors say
  // what was asked and why it failed: IMDS not reachable, refused token, unexpected status.
  std::expected<std::optional<std::string>, std::string> get(const std::string& path);

  // The instance type ("p5.48xlarge"), for picking a hardware profile.
  std::expected<std::string, std::string> fetch_instance_type();

  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Response {
    long status = 0;
    std::string body;
  };
  std::expected<Response, std::string> request(bool put, const std::string& path, const std::string& header);
  std::expected<void, std::string> refresh_token();

  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  std::string token_;
  std::chrono::steady_clock::time_point token_expires_{};
};

// The instance type from the IMDS at `endpoint`, in one call.
std::expected<std::string, std::string> fetch_instance_type(const std::string& endpoint = "http://169.254.169.254",
                                                            std::chrono::milliseconds timeout = std::chrono::seconds(1));

}  // namespace ar::healthd
