// The message protocol between the SPANK plugin (auto_resume.so) and the node daemon (healthd).
//
// Transport: a Unix stream socket. Framing: one JSON object per line ('\n'-terminated). JSON text
// produced by nlohmann_json never contains a raw newline, so a line is always exactly one message.
// A line longer than kMaxMessageBytes is refused with a "too_large" error reply.
//
// Every request carries "v" (the protocol version) and "type". Every reply carries "v" and "ok";
// a failed request gets {"ok":false,"error":{"code":..., "message":...}}, never a silent disconnect.
//
// This header is compiled by both sides, so it holds only the protocol: no I/O, no logging.
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "auto_resume/safe_text.hpp"

namespace ar::proto {

inline constexpr int kVersion = 1;
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;
// Replies are not bound by the request limit: the status of a large node (every check's per-device
// detail: 32 EFA devices, 16 Neuron devices, 8 GPUs) runs past 64 KiB. Clients accept this much.
inline constexpr std::size_t kMaxReplyBytes = 16 * 1024 * 1024;

// Slurm's pseudo step ids (slurm.h: SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT, ...), kept here so that the
// daemon side need not include slurm.h to print them.
inline constexpr std::uint32_t kBatchStep = 0xfffffffb;
inline constexpr std::uint32_t kExternStep = 0xfffffffc;
inline constexpr std::uint32_t kInteractiveStep = 0xfffffffa;
// A step srun started (0, 1, ...), as opposed to the batch script, extern or interactive step.
constexpr bool is_user_step(std::uint32_t step_id) { return step_id < kInteractiveStep; }
inline constexpr std::uint32_t kFirstSpecialStepId = 0xfffffff0;  // ids from here on are pseudo steps

inline std::string step_name(std::uint32_t step_id) {
  switch (step_id) {
    case kBatchStep: return "batch";
    case kExternStep: return "extern";
    case kInteractiveStep: return "interactive";
    default: return std::to_string(step_id);
  }
}

// ---- requests -------------------------------------------------------------------------------------

struct Ping {};
struct StatusQuery {};
struct JobsQuery {};
// Runs every check now (an on-demand sweep, expensive checks included). Root only. The reply carries
// the sweep's number; it is done once `status` reports a `health.sweep_seq` at least as high.
struct CheckNow {};
struct ExplainQuery {
  std::uint32_t job_id = 0;
};
// The node's recent notices (incidents, drains, requeues, resumes, admin actions), newest first, at
// most `limit` of them. Anyone may ask (as for status); a job's events are left out for those who
// may not see the job (as its explain timeline is).
struct EventsQuery {
  std::uint32_t limit = 50;
};

// An admin's action through the daemon, journalled and carried out like healthd's own, root only.
// The reply comes once it is queued for the engine ({"node", "message", "at_ms", "request"}); the
// engine journals it and carries it out at its next step, and an `admin` event with the same
// "request" says what came of it ("action": "none" when nothing was done; see EventsQuery).
//   drain:  take the node out of service with reason "healthd: ADMIN: <reason>"; held (healthd never
//           returns it by itself), resumed by `resume`.
//   resume: return a node healthd drained (its own drain or an admin's through it); a node drained by
//           someone else is refused (`conflict`) unless `force`.
//   clear:  forget an active fault of this code (an admin fixed it): the checks drop it, and the node
//           comes back as after any fault once the next sweeps are healthy. A code not active is
//           `conflict`.
struct AdminDrain {
  std::string reason;
};
struct AdminResume {
  bool force = false;
};
struct AdminClear {
  std::string code;
};

// A job's progress watchdog (--auto-resume-heartbeat, --auto-resume-stall): the file or directory
// whose modification time the training loop moves, and how long it may stand still.
struct Heartbeat {
  std::string path;                   // absolute; a directory counts by its newest entry
  std::uint32_t stall_s = 300;        // after the first beat (NVIDIA's resiliency extension: 300 s)
  std::uint32_t first_beat_s = 1800;  // before it: a job loads data and compiles first (NVRx: 1800 s)
  // --auto-resume-heartbeat-dir: `path` is a directory of one file per task (rank-<global task id>,
  // AUTO_RESUME_HEARTBEAT_FILE in the task's environment); the job's progress is the newest of them,
  // and each node judges its own ranks against the others' when the job stalls.
  bool per_rank = false;
  // --auto-resume-checkpoint-dir, where the job said it writes its checkpoints (a valid_heartbeat_path;
  // empty: none): a straggler's node is kept off the job at its next complete checkpoint.
  std::string checkpoint_dir{};
};
inline constexpr std::uint32_t kMaxStallSeconds = 30 * 24 * 3600;
inline constexpr std::size_t kMaxHeartbeatPathBytes = 4096;

// What the plugin accepts on the command line and healthd over the socket and from its state file:
// an absolute path of bounded length, valid UTF-8 without control characters (C0, DEL, and the C1
// controls U+0080..U+009F, which a terminal acts on as on ESC: the path goes into root's logs and
// timelines, and a stall's message into the job's admin comment).
inline bool valid_heartbeat_path(std::string_view path) {
  return !path.empty() && path.front() == '/' && path.size() <= kMaxHeartbeatPathBytes && text::is_clean_utf8(path);
}

inline nlohmann::json to_json(const Heartbeat& hb) {
  nlohmann::json j = {{"path", hb.path}, {"stall_s", hb.stall_s}, {"first_beat_s", hb.first_beat_s}};
  if (hb.per_rank) j["per_rank"] = true;
  if (!hb.checkpoint_dir.empty()) j["checkpoint_dir"] = hb.checkpoint_dir;
  return j;
}

struct StepStart {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string node;
  std::uint32_t uid = 0;
  bool auto_resume = false;
  std::uint32_t restart_count = 0;
  std::optional<std::uint32_t> max_resumes;  // the user's own cap (--auto-resume-max); absent: the admin's
  std::optional<Heartbeat> heartbeat;        // --auto-resume-heartbeat; absent: no watchdog
};

// A task forked by slurmstepd (from slurm_spank_task_post_fork, as root): which process runs which
// rank here, so healthd can look at a stalled job's tasks on this node. Sent for steps with per-rank
// heartbeats only.
struct TaskStart {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string node;
  std::uint32_t task_rank = 0;  // the global task id (the rank of AUTO_RESUME_HEARTBEAT_FILE)
  std::uint32_t pid = 0;
};

struct TaskExit {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string node;
  std::uint32_t task_rank = 0;
  int wait_status = 0;  // raw wait(2) status, as slurmstepd reports it (768 == exit 3)
};

struct StepEnd {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string node;
};

using Request = std::variant<Ping, StatusQuery, JobsQuery, ExplainQuery, CheckNow, EventsQuery, AdminDrain, AdminResume,
                             AdminClear, StepStart, TaskStart, TaskExit, StepEnd>;

// Error codes carried in error replies. Stable strings: clients may switch on them.
namespace err {
inline constexpr const char* kMalformed = "malformed";            // not JSON, or not an object
inline constexpr const char* kBadVersion = "unsupported_version";  // "v" missing or not ours
inline constexpr const char* kUnknownType = "unknown_type";
inline constexpr const char* kBadField = "bad_field";  // a field missing or of the wrong type
inline constexpr const char* kTooLarge = "too_large";
inline constexpr const char* kForbidden = "forbidden";  // a lifecycle message or admin action from a process not running as root
inline constexpr const char* kConflict = "conflict";    // an admin action that does not fit the node's state (the message says why)
inline constexpr const char* kInternal = "internal";
inline constexpr const char* kBusy = "busy";        // too many connections from this uid (or in all): try later
inline constexpr const char* kTimeout = "timeout";  // a message not completed in time; the connection is closed
}  // namespace err

// Client text as it may appear in an error message or a log line: at most `max_bytes` of it, in
// quotes, every byte outside printable ASCII (and the quote and backslash) written \xHH. One line,
// pure ASCII (so a cut never splits a UTF-8 sequence), bounded whatever the client sent.
inline std::string quote_client_text(std::string_view text, std::size_t max_bytes = 64) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (unsigned char c : text.substr(0, max_bytes)) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  out += '\'';
  if (text.size() > max_bytes) out += " (" + std::to_string(text.size() - max_bytes) + " more bytes)";
  return out;
}

struct Error {
  std::string code;
  std::string message;
};

// ---- encoding -------------------------------------------------------------------------------------

namespace detail {
inline nlohmann::json header(const char* type) { return {{"v", kVersion}, {"type", type}}; }
}  // namespace detail

inline nlohmann::json to_json(const Ping&) { return detail::header("ping"); }
inline nlohmann::json to_json(const StatusQuery&) { return detail::header("status"); }
inline nlohmann::json to_json(const CheckNow&) { return detail::header("check"); }
inline nlohmann::json to_json(const JobsQuery&) { return detail::header("jobs"); }
inline nlohmann::json to_json(const ExplainQuery& m) {
  auto j = detail::header("explain");
  j["job_id"] = m.job_id;
  return j;
}
inline nlohmann::json to_json(const EventsQuery& m) {
  auto j = detail::header("events");
  j["limit"] = m.limit;
  return j;
}
inline nlohmann::json to_json(const AdminDrain& m) {
  auto j = detail::header("admin_drain");
  j["reason"] = m.reason;
  return j;
}
inline nlohmann::json to_json(const AdminResume& m) {
  auto j = detail::header("admin_resume");
  j["force"] = m.force;
  return j;
}
inline nlohmann::json to_json(const AdminClear& m) {
  auto j = detail::header("admin_clear");
  j["code"] = m.code;
  return j;
}

inline nlohmann::json to_json(const StepStart& m) {
  auto j = detail::header("step_start");
  j["job_id"] = m.job_id;
  j["step_id"] = m.step_id;
  j["node"] = m.node;
  j["uid"] = m.uid;
  j["auto_resume"] = m.auto_resume;
  j["restart_count"] = m.restart_count;
  if (m.max_resumes) j["max_resumes"] = *m.max_resumes;
  if (m.heartbeat) j["heartbeat"] = to_json(*m.heartbeat);
  return j;
}

inline nlohmann::json to_json(const TaskStart& m) {
  auto j = detail::header("task_start");
  j["job_id"] = m.job_id;
  j["step_id"] = m.step_id;
  j["node"] = m.node;
  j["task_rank"] = m.task_rank;
  j["pid"] = m.pid;
  return j;
}

inline nlohmann::json to_json(const TaskExit& m) {
  auto j = detail::header("task_exit");
  j["job_id"] = m.job_id;
  j["step_id"] = m.step_id;
  j["node"] = m.node;
  j["task_rank"] = m.task_rank;
  j["wait_status"] = m.wait_status;
  return j;
}

inline nlohmann::json to_json(const StepEnd& m) {
  auto j = detail::header("step_end");
  j["job_id"] = m.job_id;
  j["step_id"] = m.step_id;
  j["node"] = m.node;
  return j;
}

inline nlohmann::json to_json(const Request& r) {
  return std::visit([](const auto& m) { return to_json(m); }, r);
}

// One framed line, newline included. Never throws: a string that is not valid UTF-8 (text should be
// sanitized where it enters, but one missed must not end a reply or the daemon's event loop) is
// sent with U+FFFD in place of each bad byte.
inline std::string encode(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
}

inline nlohmann::json ok_reply(nlohmann::json data = nlohmann::json::object()) {
  return {{"v", kVersion}, {"ok", true}, {"data", std::move(data)}};
}

inline nlohmann::json error_reply(const Error& e) {
  return {{"v", kVersion}, {"ok", false}, {"error", {{"code", e.code}, {"message", e.message}}}};
}

// ---- decoding -------------------------------------------------------------------------------------

namespace detail {

template <typename T>
std::expected<T, Error> field(const nlohmann::json& j, const char* name);

template <>
inline std::expected<std::uint32_t, Error> field<std::uint32_t>(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return std::unexpected(Error{err::kBadField, std::string("missing field '") + name + "'"});
  if (!it->is_number_unsigned())
    return std::unexpected(Error{err::kBadField, std::string("field '") + name + "' must be an unsigned integer"});
  auto v = it->get<std::uint64_t>();
  if (v > UINT32_MAX)
    return std::unexpected(Error{err::kBadField, std::string("field '") + name + "' is out of range"});
  return static_cast<std::uint32_t>(v);
}

template <>
inline std::expected<int, Error> field<int>(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return std::unexpected(Error{err::kBadField, std::string("missing field '") + name + "'"});
  if (!it->is_number_integer())
    return std::unexpected(Error{err::kBadField, std::string("field '") + name + "' must be an integer"});
  auto v = it->get<std::int64_t>();
  if (v < INT32_MIN || v > INT32_MAX)
    return std::unexpected(Error{err::kBadField, std::string("field '") + name + "' is out of range"});
  return static_cast<int>(v);
}

template <>
inline std::expected<bool, Error> field<bool>(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return std::unexpected(Error{err::kBadField, std::string("missing field '") + name + "'"});
  if (!it->is_boolean())
    return std::unexpected(Error{err::kBadField, std::string("field '") + name + "' must be a boolean"});
  return it->get<bool>();
}

template <>
inline std::expected<std::string, Error> field<std::string>(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return std::unexpected(Error{err::kBadField, std::string("missing field '") + name + "'"});
  if (!it->is_string() || it->get_ref<const std::string&>().empty())
    return std::unexpected(Error{err::kBadField, std::string("field '") + name + "' must be a non-empty string"});
  return it->get<std::string>();
}

// A step's heartbeat: a valid_heartbeat_path, and stall times in range.
inline std::expected<Heartbeat, Error> heartbeat_field(const nlohmann::json& j) {
  auto bad = [](std::string what) { return std::unexpected(Error{err::kBadField, "field 'heartbeat': " + std::move(what)}); };
  if (!j.is_object()) return bad("must be an object");
  Heartbeat hb;
  auto path = field<std::string>(j, "path");
  if (!path) return bad(path.error().message);
  if (!valid_heartbeat_path(*path))
    return bad("'path' must be an absolute path of at most " + std::to_string(kMaxHeartbeatPathBytes) +
               " bytes, valid UTF-8 without control characters");
  hb.path = std::move(*path);
  for (auto [name, out] : {std::pair{"stall_s", &hb.stall_s}, std::pair{"first_beat_s", &hb.first_beat_s}}) {
    auto v = field<std::uint32_t>(j, name);
    if (!v) return bad(v.error().message);
    if (*v == 0 || *v > kMaxStallSeconds)
      return bad(std::string("'") + name + "' must be from 1 to " + std::to_string(kMaxStallSeconds) + " seconds");
    *out = *v;
  }
  if (j.contains("per_rank")) {
    auto per_rank = field<bool>(j, "per_rank");
    if (!per_rank) return bad(per_rank.error().message);
    hb.per_rank = *per_rank;
  }
  if (j.contains("checkpoint_dir")) {
    auto dir = field<std::string>(j, "checkpoint_dir");
    if (!dir) return bad(dir.error().message);
    if (!valid_heartbeat_path(*dir))
      return bad("'checkpoint_dir' must be an absolute path of at most " + std::to_string(kMaxHeartbeatPathBytes) +
                 " bytes, valid UTF-8 without control characters");
    hb.checkpoint_dir = std::move(*dir);
  }
  return hb;
}

// Reads fields into the members of `out` in order, stopping at the first error.
template <typename Out, typename... Fields>
std::optional<Error> read_fields(const nlohmann::json& j, Out& out, Fields... fields) {
  std::optional<Error> failure;
  auto one = [&](auto pair) {
    if (failure) return;
    auto [name, member] = pair;
    using V = std::remove_reference_t<decltype(out.*member)>;
    auto v = field<V>(j, name);
    if (!v) failure = v.error();
    else out.*member = std::move(*v);
  };
  (one(fields), ...);
  return failure;
}

template <typename M>
auto f(const char* name, M member) { return std::pair{name, member}; }

}  // namespace detail

// Parses one line (without its newline) into a request, or says precisely what is wrong with it.
inline std::expected<Request, Error> parse_request(std::string_view line) {
  using detail::f;
  if (line.size() > kMaxMessageBytes)
    return std::unexpected(Error{err::kTooLarge, "message of " + std::to_string(line.size()) +
                                                     " bytes exceeds the limit of " +
                                                     std::to_string(kMaxMessageBytes)});
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::unexpected(Error{err::kMalformed, "message is not valid JSON"});
  if (!j.is_object()) return std::unexpected(Error{err::kMalformed, "message is not a JSON object"});

  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer())
    return std::unexpected(Error{err::kBadVersion, "message has no protocol version 'v'"});
  if (v->get<std::int64_t>() != kVersion)
    return std::unexpected(Error{err::kBadVersion, "protocol version " + v->dump() + " is not supported (this side speaks " +
                                                       std::to_string(kVersion) + ")"});
  auto t = j.find("type");
  if (t == j.end() || !t->is_string()) return std::unexpected(Error{err::kBadField, "message has no 'type'"});
  const auto& type = t->get_ref<const std::string&>();

  auto finish = [](auto msg, std::optional<Error> e) -> std::expected<Request, Error> {
    if (e) return std::unexpected(*e);
    return Request{std::move(msg)};
  };
  if (type == "ping") return Request{Ping{}};
  if (type == "status") return Request{StatusQuery{}};
  if (type == "jobs") return Request{JobsQuery{}};
  if (type == "check") return Request{CheckNow{}};
  if (type == "explain") {
    // The fields are read before the message is handed on: the order in which a call's arguments are
    // evaluated is unspecified (clang reads left to right, and would hand on the message unread).
    ExplainQuery m;
    auto e = detail::read_fields(j, m, f("job_id", &ExplainQuery::job_id));
    return finish(std::move(m), e);
  }
  if (type == "events") {
    EventsQuery m;
    if (j.contains("limit")) {
      auto e = detail::read_fields(j, m, f("limit", &EventsQuery::limit));
      if (!e && (m.limit == 0 || m.limit > 1000)) e = Error{err::kBadField, "field 'limit' must be 1 to 1000"};
      if (e) return std::unexpected(*e);
    }
    return Request{m};
  }
  if (type == "admin_drain") {
    AdminDrain m;
    auto e = detail::read_fields(j, m, f("reason", &AdminDrain::reason));
    if (!e && m.reason.size() > 200) e = Error{err::kBadField, "field 'reason' must be at most 200 bytes"};
    return finish(std::move(m), e);
  }
  if (type == "admin_resume") {
    AdminResume m;
    auto e = j.contains("force") ? detail::read_fields(j, m, f("force", &AdminResume::force)) : std::nullopt;
    return finish(std::move(m), e);
  }
  if (type == "admin_clear") {
    AdminClear m;
    auto e = detail::read_fields(j, m, f("code", &AdminClear::code));
    if (!e && m.code.size() > 64) e = Error{err::kBadField, "field 'code' must be at most 64 bytes"};
    return finish(std::move(m), e);
  }
  if (type == "step_start") {
    StepStart m;
    auto e = detail::read_fields(j, m, f("job_id", &StepStart::job_id), f("step_id", &StepStart::step_id),
                                 f("node", &StepStart::node), f("uid", &StepStart::uid),
                                 f("auto_resume", &StepStart::auto_resume),
                                 f("restart_count", &StepStart::restart_count));
    if (!e && j.contains("max_resumes")) {
      auto cap = detail::field<std::uint32_t>(j, "max_resumes");
      if (!cap) e = cap.error();
      else m.max_resumes = *cap;
    }
    if (!e && j.contains("heartbeat")) {
      auto hb = detail::heartbeat_field(j["heartbeat"]);
      if (!hb) e = hb.error();
      else m.heartbeat = std::move(*hb);
    }
    return finish(std::move(m), e);
  }
  if (type == "task_start") {
    TaskStart m;
    auto e = detail::read_fields(j, m, f("job_id", &TaskStart::job_id), f("step_id", &TaskStart::step_id),
                                 f("node", &TaskStart::node), f("task_rank", &TaskStart::task_rank),
                                 f("pid", &TaskStart::pid));
    if (!e && m.pid <= 1) e = Error{err::kBadField, "field 'pid' must be a process id above 1"};
    return finish(std::move(m), e);
  }
  if (type == "task_exit") {
    TaskExit m;
    auto e = detail::read_fields(j, m, f("job_id", &TaskExit::job_id), f("step_id", &TaskExit::step_id),
                                 f("node", &TaskExit::node), f("task_rank", &TaskExit::task_rank),
                                 f("wait_status", &TaskExit::wait_status));
    return finish(std::move(m), e);
  }
  if (type == "step_end") {
    StepEnd m;
    auto e = detail::read_fields(j, m, f("job_id", &StepEnd::job_id), f("step_id", &StepEnd::step_id),
                                 f("node", &StepEnd::node));
    return finish(std::move(m), e);
  }
  return std::unexpected(Error{err::kUnknownType, "unknown message type " + quote_client_text(type)});
}

// A reply as the client sees it: the data of an ok reply, or the error.
inline std::expected<nlohmann::json, Error> parse_reply(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::unexpected(Error{err::kMalformed, "reply is not a JSON object"});
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) return std::unexpected(Error{err::kMalformed, "reply has no 'ok'"});
  if (ok->get<bool>()) return j.value("data", nlohmann::json::object());
  // The daemon's bytes are read as hostile as any: a code or message of another type (a number, an
  // object) is not one, and never throws here.
  auto error = j.find("error");
  const bool has_error = error != j.end() && error->is_object();
  auto text = [&](const char* key, const char* fallback) {
    if (!has_error) return std::string(fallback);
    auto it = error->find(key);
    return it != error->end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
  };
  return std::unexpected(Error{text("code", err::kInternal), text("message", "unknown error")});
}

}  // namespace ar::proto
