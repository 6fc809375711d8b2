// The user-facing option of the plugin: --auto-resume[=0|1].
#pragma once

#include <cstdint>
#include <expected>
#include <string>

namespace ar::plugin {

inline constexpr const char* kOptionName = "auto-resume";

// Where an option value came from. Slurm 22.05 forwards a bare `--auto-resume` to slurmstepd as an
// empty string, and to the srun commands inside a batch script (through the variable
// SLURM_SPANK__SLURM_SPANK_OPTION_auto_resume_auto_resume) as the literal text "(null)". On a command
// line, only a user typing `--auto-resume=` gives an empty value, which is refused.
enum class ValueSource { command_line, forwarded_by_slurm };

// `value` is the option argument as Slurm hands it to the callback: nullptr when the user wrote the
// bare flag (which means 1). Anything but "0" or "1" is refused with a message naming the value,
// except the forms in which Slurm itself forwards a bare flag ("" and "(null)").
std::expected<bool, std::string> parse_auto_resume_value(const char* value,
                                                         ValueSource source = ValueSource::command_line);

inline constexpr const char* kCheckpointOptionName = "auto-resume-checkpoint-dir";

// --auto-resume-checkpoint-dir=DIR: an absolute path (the job's steps start in other directories).
std::expected<std::string, std::string> parse_checkpoint_dir(const char* value);

inline constexpr const char* kMaxResumesOptionName = "auto-resume-max";

// --auto-resume-max=N: the user's cap on resumes of this job (it can only lower the admin's).
std::expected<std::uint32_t, std::string> parse_max_resumes(const char* value);

inline constexpr const char* kHeartbeatOptionName = "auto-resume-heartbeat";
inline constexpr const char* kHeartbeatDirOptionName = "auto-resume-heartbeat-dir";
inline constexpr const char* kStallOptionName = "auto-resume-stall";

// --auto-resume-heartbeat=PATH: the file (or directory, by its newest entry) the job's training loop
// keeps touching; an absolute path, as for the checkpoint directory.
std::expected<std::string, std::string> parse_heartbeat_path(const char* value);

// --auto-resume-stall=SECONDS[,FIRST]: how long the heartbeat may stand still, and (FIRST) how long
// before its first beat; FIRST defaults to the larger of SECONDS and 1800.
struct StallTimes {
  std::uint32_t stall_s = 300;
  std::uint32_t first_beat_s = 1800;
};
std::expected<StallTimes, std::string> parse_stall(const char* value);

// The environment variable through which Slurm forwards the option from sbatch/salloc to the srun
// commands inside the allocation.
inline constexpr const char* kForwardedOptionEnv = "SLURM_SPANK__SLURM_SPANK_OPTION_auto_resume_auto_resume";

}  // namespace ar::plugin
