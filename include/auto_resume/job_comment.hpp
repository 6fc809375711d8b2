// The line healthd writes into a job's admin comment (AdminComment=, never the user's Comment=) when
// it requeues the job, and the plugin reads back in the restarted job to tell the training code why
// the last attempt ended. One definition for both sides.
//   auto-resume: attempt 1 ended: GPU-XID-79 on n2: NVRM: Xid (PCI:0000:17:00): 79, ...
// or, when the failed step was run again inside the same allocation instead of a requeue:
//   auto-resume: attempt 2 ended (step 0 re-run on 2 nodes, re-runs 1): GPU-XID-79 on n2: ...
// "re-runs R" counts the job's step re-runs so far (they count against the resume cap with the
// requeues), and stays on the line when a later requeue replaces it.
// The admin comment may hold other lines (an admin's, another tool's): healthd replaces its own line
// only, and keeps the others as they are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auto_resume/safe_text.hpp"

namespace ar {

struct AttemptEnd {
  std::uint32_t attempt = 0;  // the attempt that ended (1 = the first run)
  std::string code;           // fault code, e.g. GPU-XID-79
  std::string node;           // the node that found it
  std::string message;
  std::optional<std::uint32_t> rerun_step;  // the step run again in the allocation (no requeue)
  std::uint32_t rerun_nodes = 0;            // how many nodes that step needs
  std::uint32_t reruns = 0;                 // the job's step re-runs so far, this one included
};

inline constexpr std::size_t kMaxCommentBytes = 240;

inline std::string format_attempt_comment(const AttemptEnd& e) {
  std::string c = "auto-resume: attempt " + std::to_string(e.attempt) + " ended";
  if (e.rerun_step)
    c += " (step " + std::to_string(*e.rerun_step) + " re-run on " + std::to_string(e.rerun_nodes) + " nodes, re-runs " +
         std::to_string(e.reruns) + ")";
  else if (e.reruns > 0) c += " (re-runs " + std::to_string(e.reruns) + ")";
  c += ": " + e.code + " on " + e.node + ": " + e.message;
  // An admin reads the line with scontrol in a terminal, and its parts came from outside (a heartbeat
  // path a user chose, a kernel-log line): control characters (C0, DEL, C1) are escaped, invalid bytes
  // too, and the cut falls between code points.
  return text::sanitize(c, kMaxCommentBytes);
}

namespace detail {
inline std::optional<std::uint32_t> parse_u32(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const unsigned long long v = std::stoull(s);
  if (v > 0xffffffffULL) return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

// The lines of an admin comment, in order (Slurm keeps it as one string).
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}
}  // namespace detail

inline constexpr const char* kCommentPrefix = "auto-resume: ";

// What one node's healthd found about its own part of a stalled job (engine/rank_evidence), one line
// per node that the evidence points to, for the node that acts on the stall to read:
//   auto-resume evidence: attempt 1 on n2: rank 1: CPU time did not move in 20 s (+0.00 s); checks pass
struct EvidenceLine {
  std::uint32_t attempt = 0;  // the attempt that stalled (1 = the first run)
  std::string node;
  std::string text;
};

inline constexpr const char* kEvidencePrefix = "auto-resume evidence: attempt ";

inline std::string format_evidence_line(const EvidenceLine& e) {
  return text::sanitize(std::string(kEvidencePrefix) + std::to_string(e.attempt) + " on " + e.node + ": " + e.text,
                        kMaxCommentBytes);
}

// Read back strictly, as the attempt line is: "auto-resume evidence: attempt A on NODE: TEXT".
inline std::optional<EvidenceLine> parse_evidence_line(const std::string& c) {
  const std::string head = kEvidencePrefix;
  if (c.rfind(head, 0) != 0) return std::nullopt;
  const std::size_t on = c.find(" on ", head.size());
  if (on == std::string::npos) return std::nullopt;
  EvidenceLine e;
  const auto attempt = detail::parse_u32(c.substr(head.size(), on - head.size()));
  if (!attempt) return std::nullopt;
  e.attempt = *attempt;
  const std::size_t colon = c.find(": ", on + 4);
  if (colon == std::string::npos) return std::nullopt;
  e.node = c.substr(on + 4, colon - on - 4);
  e.text = c.substr(colon + 2);
  if (e.node.empty() || e.node.find(' ') != std::string::npos) return std::nullopt;
  return e;
}

// The evidence lines of an admin comment for `attempt`, one per node (the last one a node wrote).
inline std::vector<EvidenceLine> evidence_lines(const std::string& admin_comment, std::uint32_t attempt) {
  std::vector<EvidenceLine> out;
  for (const auto& line : detail::lines(admin_comment))
    if (auto e = parse_evidence_line(line); e && e->attempt == attempt) {
      std::erase_if(out, [&](const EvidenceLine& o) { return o.node == e->node; });
      out.push_back(std::move(*e));
    }
  return out;
}

// What the node acting on a stall decided of the suspects (policy/suspect_policy.hpp), read back by
// the nodes named to keep their suspicion:
//   auto-resume suspects: attempt 1: n2: suspect n2 kept off the next attempt
//   auto-resume suspects: attempt 1: none: 2 of the job's 2 nodes show the same (n1,n2): ...
struct SuspectsLine {
  std::uint32_t attempt = 0;
  std::vector<std::string> nodes;  // empty: none named
  std::string why;
};

inline constexpr const char* kSuspectsPrefix = "auto-resume suspects: attempt ";

inline std::string format_suspects_line(const SuspectsLine& s) {
  std::string names;
  for (const auto& n : s.nodes) names += (names.empty() ? "" : ",") + n;
  return text::sanitize(std::string(kSuspectsPrefix) + std::to_string(s.attempt) + ": " + (names.empty() ? "none" : names) +
                            ": " + s.why,
                        kMaxCommentBytes);
}

// The suspects line of `attempt` in an admin comment, if there is one.
inline std::optional<SuspectsLine> suspects_line(const std::string& admin_comment, std::uint32_t attempt) {
  const std::string head = std::string(kSuspectsPrefix) + std::to_string(attempt) + ": ";
  for (const auto& line : detail::lines(admin_comment)) {
    if (line.rfind(head, 0) != 0) continue;
    const std::size_t colon = line.find(": ", head.size());
    if (colon == std::string::npos) return std::nullopt;
    SuspectsLine s;
    s.attempt = attempt;
    s.why = line.substr(colon + 2);
    const std::string names = line.substr(head.size(), colon - head.size());
    if (names == "none") return s;
    for (std::size_t p = 0; p <= names.size();) {
      std::size_t comma = names.find(',', p);
      if (comma == std::string::npos) comma = names.size();
      if (comma == p) return std::nullopt;
      s.nodes.push_back(names.substr(p, comma - p));
      p = comma + 1;
    }
    return s;
  }
  return std::nullopt;
}

// `existing` with `our_line` in: the auto-resume line (if any) replaced by an attempt line; for an
// evidence line, the same node's evidence and every evidence line of another attempt replaced.
// Other lines (an admin's, another tool's) are kept. Every line of ours passes here: it is made one
// line, safe for a terminal and bounded as format_attempt_comment's.
inline std::string merge_admin_comment(const std::string& existing, const std::string& our_line) {
  const std::string ours = text::sanitize(our_line, kMaxCommentBytes);
  const auto evidence = parse_evidence_line(ours);
  const bool suspects = ours.rfind(kSuspectsPrefix, 0) == 0;
  auto replaced = [&](const std::string& line) {
    if (suspects) return line.rfind(kSuspectsPrefix, 0) == 0;
    if (!evidence) return line.rfind(kCommentPrefix, 0) == 0;
    const auto other = parse_evidence_line(line);
    return other && (other->node == evidence->node || other->attempt != evidence->attempt);
  };
  std::string out;
  for (const auto& line : detail::lines(existing))
    if (!line.empty() && !replaced(line)) out += line + "\n";
  return out + ours;
}

// The auto-resume line of an admin comment, or empty.
inline std::string auto_resume_line(const std::string& admin_comment) {
  for (const auto& line : detail::lines(admin_comment))
    if (line.rfind(kCommentPrefix, 0) == 0) return line;
  return {};
}

// Read back strictly: the line is in a field an admin (or anyone with scontrol rights) may edit, and
// the plugin acts on it (a re-run), so anything not in the exact form above is no line of ours.
inline std::optional<AttemptEnd> parse_attempt_comment(const std::string& c) {
  const std::string head = "auto-resume: attempt ";
  if (c.rfind(head, 0) != 0) return std::nullopt;
  std::size_t pos = head.size();
  std::size_t end = c.find(" ended", pos);
  if (end == std::string::npos) return std::nullopt;
  AttemptEnd e;
  auto attempt = detail::parse_u32(c.substr(pos, end - pos));
  if (!attempt) return std::nullopt;
  e.attempt = *attempt;
  pos = end + 6;
  if (c.compare(pos, 2, " (") == 0) {
    const std::size_t close = c.find("): ", pos);
    if (close == std::string::npos) return std::nullopt;
    std::string inner = c.substr(pos + 2, close - pos - 2);
    const std::string step = "step ", rerun = " re-run on ", nodes = " nodes, ", reruns = "re-runs ";
    if (inner.rfind(step, 0) == 0) {
      const std::size_t r = inner.find(rerun);
      const std::size_t n = inner.find(nodes);
      if (r == std::string::npos || n == std::string::npos || n < r) return std::nullopt;
      e.rerun_step = detail::parse_u32(inner.substr(step.size(), r - step.size()));
      auto count = detail::parse_u32(inner.substr(r + rerun.size(), n - r - rerun.size()));
      if (!e.rerun_step || !count) return std::nullopt;
      e.rerun_nodes = *count;
      inner = inner.substr(n + nodes.size());
    }
    if (inner.rfind(reruns, 0) != 0) return std::nullopt;
    auto n = detail::parse_u32(inner.substr(reruns.size()));
    if (!n) return std::nullopt;
    e.reruns = *n;
    pos = close + 1;
  }
  if (c.compare(pos, 2, ": ") != 0) return std::nullopt;
  pos += 2;
  std::size_t on = c.find(" on ", pos);
  if (on == std::string::npos) return std::nullopt;
  e.code = c.substr(pos, on - pos);
  pos = on + 4;
  std::size_t colon = c.find(": ", pos);
  e.node = c.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
  if (colon != std::string::npos) e.message = c.substr(colon + 2);
  if (e.code.empty() || e.node.empty()) return std::nullopt;
  return e;
}

// Whether healthd's `line` asks step `step_id`, in attempt `restart_count` of its job (Slurm's restart
// count), to run again inside the allocation. A line of an earlier attempt or of another step never
// does. The srun of the step reads it to re-run (plugin/step_rerun), healthd to leave a re-run alone.
inline bool asks_step_rerun(const std::optional<AttemptEnd>& line, std::uint32_t step_id, std::uint32_t restart_count) {
  return line && line->rerun_step && *line->rerun_step == step_id && line->reruns > 0 &&
         line->attempt == restart_count + line->reruns;
}

}  // namespace ar
