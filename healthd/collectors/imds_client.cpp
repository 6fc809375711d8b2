#include "imds_client.hpp"

#include <memory>
#include <mutex>

#include <curl/curl.h>

#include "text/text.hpp"

namespace ar::healthd {
namespace {

constexpr std::size_t kMaxBody = 64 * 1024;  // metadata documents are small; never buffer more
constexpr int kTokenTtlSeconds = 21600;

std::size_t collect(char* data, std::size_t size, std::size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  const std::size_t bytes = size * n;
  if (body->size() + bytes > kMaxBody) return 0;  // makes curl fail with CURLE_WRITE_ERROR
  body->append(data, bytes);
  return bytes;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

ImdsClient::ImdsClient(std::string endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  global_init();
}

std::expected<ImdsClient::Response, std::string> ImdsClient::request(bool put, const std::string& path,
                                                                     const std::string& header) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return std::unexpected(std::string("curl_easy_init failed"));
  const std::string url = endpoint_ + path;
  Response response;
  char error[CURL_ERROR_SIZE] = {};
  curl_slist* headers = header.empty() ? nullptr : curl_slist_append(nullptr, header.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, &curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe on any thread
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(c, CURLOPT_PROXY, "");       // IMDS is link-local: never through a proxy
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  if (headers != nullptr) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (put) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK)
    return std::unexpected((put ? "PUT " : "GET ") + url + ": " + (error[0] != '\0' ? error : curl_easy_strerror(rc)));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  // Made valid where it enters: a body's text reaches status, logs and reasons, and the token goes
  // into a header (no CR/LF can smuggle a second one in). Valid JSON stays valid JSON.
  response.body = sanitize(response.body);
  return response;
}

std::expected<void, std::string> ImdsClient::refresh_token() {
  auto r = request(true, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: " + std::to_string(kTokenTtlSeconds));
  if (!r) return std::unexpected(r.error());
  if (r->status != 200 || r->body.empty())
    return std::unexpected("PUT " + endpoint_ + "/latest/api/token: HTTP " + std::to_string(r->status) + ", no token");
  token_ = r->body;
  // Renewed well before it runs out.
  token_expires_ = std::chrono::steady_clock::now() + std::chrono::seconds(kTokenTtlSeconds / 2);
  return {};
}

std::expected<std::optional<std::string>, std::string> ImdsClient::get(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (token_.empty() || std::chrono::steady_clock::now() >= token_expires_)
      if (auto t = refresh_token(); !t) return std::unexpected(t.error());
    auto r = request(false, path, "X-aws-ec2-metadata-token: " + token_);
    if (!r) return std::unexpected(r.error());
    if (r->status == 200) return std::optional<std::string>(std::move(r->body));
    if (r->status == 404) return std::optional<std::string>();
    if (r->status == 401 && attempt == 0) {  // the token expired or IMDS restarted: one new token
      token_.clear();
      continue;
    }
    return std::unexpected("GET " + endpoint_ + path + ": HTTP " + std::to_string(r->status));
  }
  return std::unexpected("GET " + endpoint_ + path + ": token refused");
}

std::expected<std::string, std::string> ImdsClient::fetch_instance_type() {
  auto r = get("/latest/meta-data/instance-type");
  if (!r) return std::unexpected(r.error());
  if (!*r || (*r)->empty()) return std::unexpected("GET " + endpoint_ + "/latest/meta-data/instance-type: not found");
  std::string type = **r;
  while (!type.empty() && (type.back() == '\n' || type.back() == ' ')) type.pop_back();
  return type;
}

std::expected<std::string, std::string> fetch_instance_type(const std::string& endpoint,
                                                            std::chrono::milliseconds timeout) {
  ImdsClient client(endpoint, timeout);
  return client.fetch_instance_type();
}

}  // namespace ar::healthd
