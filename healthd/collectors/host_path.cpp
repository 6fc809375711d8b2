#include "host_path.hpp"

namespace ar::healthd {

std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path) {
  if (root.empty() || root == "/") return path;
  return root / path.relative_path();
}

}  // namespace ar::healthd
