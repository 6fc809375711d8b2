// Text from outside the daemon (kernel-log lines, an admin script's output, DCGM's and IMDS's
// replies, strings NVML returns) is made safe where it enters, once, so that everything downstream
// may rely on it: JSON encoding cannot throw on it, and a Slurm reason, a node comment or a log line
// built from it carries no terminal escape.
//
// sanitize() returns valid UTF-8 without control characters:
//   - an invalid byte (a stray continuation, an overlong form, a surrogate, a cut sequence) becomes
//     `\xNN` (lower-case hex), each byte on its own;
//   - tab, newline and carriage return become one space (these texts end up as one line);
//   - every other control character (C0, DEL, C1: U+0000..U+001F, U+007F..U+009F) becomes `\u00NN`
//     (ESC is `\u001b`, BEL `\u0007`), which is also how JSON writes it: a JSON document stays valid;
//   - everything else is kept as it is (backslashes too: the escapes are for reading, not undoing).
// Lengths are in bytes. A cut never splits a code point or an escape, and a cut text ends in "..."
// within the limit (a limit under 3 bytes leaves no room for it and cuts plainly).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ar::healthd {

inline constexpr std::size_t kNoLimit = std::string::npos;

// `bytes` made valid and free of control characters, at most `max_len` bytes long.
std::string sanitize(std::string_view bytes, std::size_t max_len = kNoLimit);

// A C string a library wrote into a fixed buffer of `size` bytes (up to its NUL, or the buffer's end
// if it left none), sanitized.
std::string sanitize_c_buffer(const char* buf, std::size_t size, std::size_t max_len = kNoLimit);

// `s` cut to at most `max_bytes`, at a code point, with "..." appended within the limit when cut.
// For text already valid (from sanitize); on other bytes it still never splits a valid sequence.
std::string truncate_utf8(std::string s, std::size_t max_bytes);

// Where to cut `s` to keep at most `max_bytes`: the largest n <= min(max_bytes, s.size()) such that
// s[0, n) does not end in a sequence cut short (at most 3 bytes less). Needs only the bytes before
// the cut, so a reader can cut a line whose rest it has not read yet.
std::size_t utf8_boundary(std::string_view s, std::size_t max_bytes);

// A fault's code and message as they may leave the daemon: into a Slurm reason, the job's admin
// comment, a hook's argv and environment, the timeline, the event log and the webhook. The one place
// where that text is bounded, whatever check (or rule of an admin, or user-named path) produced it.
// A code keeps letters, digits and "-_.:" (anything else becomes '_'), at most kMaxFaultCodeBytes; a
// message is sanitize()d to at most kMaxFaultMessageBytes.
inline constexpr std::size_t kMaxFaultCodeBytes = 64;
inline constexpr std::size_t kMaxFaultMessageBytes = 240;
std::string fault_code_text(std::string_view code);
std::string fault_message_text(std::string_view message);

// A Slurm drain reason healthd writes: one line, short enough to read in sinfo -R (kMaxReasonBytes),
// cut between characters (never inside one: a cut UTF-8 sequence is what made state writes throw).
inline constexpr std::size_t kMaxReasonBytes = 240;
inline std::string short_reason(std::string reason) { return truncate_utf8(std::move(reason), kMaxReasonBytes); }

}  // namespace ar::healthd
