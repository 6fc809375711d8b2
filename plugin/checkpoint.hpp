// Finding the checkpoint a restarted job should load, so that the training code only reads
// $AUTO_RESUME_CHECKPOINT.
//
// The rule (documented in the README and followed by examples/train.sh):
//   a checkpoint is a direct subdirectory of the checkpoint directory that contains a regular file
//   named COMPLETE, written after everything else of the checkpoint; the newest complete checkpoint
//   is the one whose COMPLETE has the newest modification time (equal times: the name sorting last).
// A subdirectory without COMPLETE (a write cut short by the very fault we recover from) is skipped.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>

namespace ar::plugin {

inline constexpr const char* kCompleteMarker = "COMPLETE";

// The newest complete checkpoint under `dir`, none if there is none, or an error naming `dir` when
// it cannot be read at all.
std::expected<std::optional<std::filesystem::path>, std::string> newest_complete_checkpoint(
    const std::filesystem::path& dir);

}  // namespace ar::plugin
