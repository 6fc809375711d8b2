#include "telemetry/webhook_url.hpp"

#include <cerrno>
#include <cstring>
#include <memory>

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ar::healthd {
namespace {

struct UrlParts {
  std::string scheme, host, port;
};

// curl's own parser, so the URL is judged exactly as curl will read it when it connects.
std::expected<UrlParts, std::string> parse(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> h(curl_url(), &curl_url_cleanup);
  if (!h) return std::unexpected(std::string("out of memory"));
  if (auto rc = curl_url_set(h.get(), CURLUPART_URL, url.c_str(), CURLU_NON_SUPPORT_SCHEME); rc != CURLUE_OK)
    return std::unexpected(std::string(curl_url_strerror(rc)));
  auto part = [&](CURLUPart which) {
    char* text = nullptr;
    std::string out;
    if (curl_url_get(h.get(), which, &text, 0) == CURLUE_OK && text != nullptr) out = text;
    curl_free(text);
    return out;
  };
  return UrlParts{part(CURLUPART_SCHEME), part(CURLUPART_HOST), part(CURLUPART_PORT)};
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::expected<std::string, std::string> check_webhook_url(const std::string& url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    return std::unexpected(std::string("must be an http:// or https:// URL"));
  for (unsigned char c : url)
    if (c <= 0x20 || c >= 0x7f) return std::unexpected(std::string("must not contain spaces, control or non-ASCII bytes"));
  auto parts = parse(url);
  if (!parts) return std::unexpected("is not a valid URL: " + parts.error());
  if (parts->host.empty()) return std::unexpected(std::string("names no host"));
  return url;
}

std::expected<std::string, std::string> read_webhook_url_file(const std::filesystem::path& file) {
  auto fail = [&](const std::string& why) { return std::unexpected(fmt::format("webhook_url_file {}: {}", file.string(), why)); };
  // O_NOFOLLOW: a symlink could point anywhere root can read; O_NONBLOCK: a FIFO must not hang the start.
  Fd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0)
    return fail(errno == ELOOP ? std::string("is a symbolic link; name the file itself") : std::string(std::strerror(errno)));
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("is not a regular file");
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return fail(fmt::format("is owned by uid {}; it must be owned by root or healthd's user (uid {})", st.st_uid, ::geteuid()));
  if ((st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0)
    return fail(fmt::format("has mode {:04o}: the webhook URL is a secret; it must not be readable or writable by group or others (chmod 600)",
                            st.st_mode & 07777));
  if (st.st_size > static_cast<off_t>(kMaxWebhookUrlFile))
    return fail(fmt::format("is {} bytes; a webhook URL file holds one URL of at most {} bytes", st.st_size, kMaxWebhookUrlFile));
  std::string text(kMaxWebhookUrlFile + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const auto n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxWebhookUrlFile) return fail(fmt::format("holds more than {} bytes", kMaxWebhookUrlFile));
  text.resize(got);
  // One line: the editor's final newline (or CRLF) is allowed, nothing after it.
  if (text.ends_with('\n')) text.pop_back();
  if (text.ends_with('\r')) text.pop_back();
  if (text.empty()) return fail("is empty; it must hold the webhook's URL");
  if (text.find_first_of("\r\n") != std::string::npos) return fail("holds more than one line; it must hold one URL");
  auto url = check_webhook_url(text);
  if (!url) return fail("its URL " + url.error());
  return url;
}

std::string webhook_origin(const std::string& url) {
  auto parts = parse(url);
  if (!parts || parts->host.empty()) return "(invalid URL)";
  return parts->scheme + "://" + parts->host + (parts->port.empty() ? "" : ":" + parts->port);
}

}  // namespace ar::healthd
