#include "render_options.hpp"

#include "text.hpp"

namespace ar::healthctl {

std::string RenderOptions::user(std::uint32_t uid) const {
  if (user_name) {
    if (auto name = printable(user_name(uid)); !name.empty()) return name;
  }
  return std::to_string(uid);
}

}  // namespace ar::healthctl
