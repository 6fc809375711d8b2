// Instance profiles: what a node of a given (EC2) instance type must have, so an admin names the type
// once (`[daemon] instance_type`) instead of every count. Built-in profiles cover the GPU and Trainium
// types training clusters use; an admin adds or overrides profiles with TOML files in `profile_dir`:
//
//   [profile."p5.48xlarge"]            # one table per profile, any number per file (*.toml)
//   gpus = 8
//   nvlinks_per_gpu = 18
//   neuron_devices = 0
//   efa_devices = 32
//   cpus = 192                         # vCPUs online
//   memory_gib = 2048                  # nominal; MemTotal is judged against it less memory_slack_pct
//   source = "where these numbers come from"
//
// A count an admin sets in the check's own section ([checks.efa] expected_devices, ...) always wins
// over the profile.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/instance_profile.hpp"

namespace ar::healthd {

const std::vector<InstanceProfile>& builtin_profiles();

// Parses one profile file; errors read "<file>:<line>:<column>: <what>".
std::expected<std::vector<InstanceProfile>, std::string> parse_profiles(std::string_view text, const std::string& source_name);

// Why no profile was found: a message, and whether it is a profile file's own error (which carries
// the file's position; otherwise the caller names the key that asked for the profile).
struct ProfileError {
  std::string message;
  bool in_profile_file = false;
};

// The profile called `name`: the admin's (every *.toml in `profile_dir`, a missing directory being
// none) before the built-in ones. "auto" (detection from EC2 instance metadata) is not resolved here.
std::expected<InstanceProfile, ProfileError> resolve_profile(const std::string& name, const std::filesystem::path& profile_dir);

// Fills the expectations the config leaves unset from the profile: each check's settings fill their own.
void apply_profile(Config& config, const InstanceProfile& profile);

}  // namespace ar::healthd
