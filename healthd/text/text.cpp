#include "text.hpp"

#include <cstring>

#include "auto_resume/safe_text.hpp"

// The rules live in include/auto_resume/safe_text.hpp, shared with the plugin (the admin comment line
// is written here and read back there): one definition of what is safe.
namespace ar::healthd {

std::string sanitize(std::string_view bytes, std::size_t max_len) { return ar::text::sanitize(bytes, max_len); }

std::string sanitize_c_buffer(const char* buf, std::size_t size, std::size_t max_len) {
  return sanitize(std::string_view(buf, ::strnlen(buf, size)), max_len);
}

std::size_t utf8_boundary(std::string_view s, std::size_t max_bytes) { return ar::text::utf8_boundary(s, max_bytes); }

std::string truncate_utf8(std::string s, std::size_t max_bytes) {
  return ar::text::truncate_utf8(std::move(s), max_bytes);
}

std::string fault_code_text(std::string_view code) {
  std::string out;
  for (char c : code.substr(0, kMaxFaultCodeBytes)) {
    const bool kept = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '_' || c == '.' || c == ':';
    out += kept ? c : '_';
  }
  return out.empty() ? std::string("UNKNOWN") : out;
}

std::string fault_message_text(std::string_view message) { return sanitize(message, kMaxFaultMessageBytes); }

}  // namespace ar::healthd
