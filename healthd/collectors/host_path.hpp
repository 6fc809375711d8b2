// Where a host path is read: every collector reads the host under [daemon] host_root ("/" on a real
// node; a directory tree in tests and in a container that mounts the host).
#pragma once

#include <filesystem>

namespace ar::healthd {

// `path` (absolute) as seen under `root`: "/dev/kmsg" under "/host" is "/host/dev/kmsg".
std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path);

}  // namespace ar::healthd
