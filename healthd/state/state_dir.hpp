// The state directory holds the journal, which decides what healthd does to Slurm: it must be
// healthd's alone.
#pragma once

#include <expected>
#include <filesystem>
#include <string>

namespace ar::healthd {

// A directory owned by another user is refused; every permission of group and others (read and
// search too: the files name every user's jobs) is taken away, with a warning: the mode is 0700. The error names the directory and what is wrong with it.
std::expected<void, std::string> secure_state_dir(const std::filesystem::path& dir);

}  // namespace ar::healthd
