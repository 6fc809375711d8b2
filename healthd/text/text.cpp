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

}  // namespace ar::healthd
