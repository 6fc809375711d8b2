// Notices: what healthd decided or did that someone watching the node wants to hear about (a drain,
// a requeue, a resume cap reached, the node returned, an action failing again and again). The
// actions (actions/slurm_actions.hpp) and the responder raise them on the engine thread; the
// metrics, the webhook and the node's event log (healthctl events) receive them.
//
// A sink's notify() is called on the engine thread, between Slurm calls: it must not block (copy the
// notice into a queue of its own, or bump a counter) and must not throw.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ar::healthd {

enum class NoticeKind : std::uint8_t {
  incident,        // a fault that takes the node out, or one calling for notify_only, was seen (a new episode)
  drain,           // healthd drained the node (reboot: see `action`)
  requeue,         // an auto-resume job was requeued (and released from Slurm's hold)
  resumed,         // a requeued job is running again
  resume_cap,      // a job's resume cap was reached: it ends as it would without healthd
  node_returned,   // healthd resumed its own drain: the node is back in service
  signal,          // an auto-resume job was signalled to checkpoint ahead of a notice
  action_failing,  // an action failed `attempts` times in a row and is still being retried
  admin,           // an admin's drain, resume or clear through healthctl
  cure,            // a step of a fault's cure chain: a GPU reset, a replacement requested, a deep check, a step that did not cure
  straggler,       // this node's ranks of a job run slower than the job's median (action: "report" or "exclude")
};

const char* to_string(NoticeKind k);
// The kinds an admin may subscribe to ([notify] on), in a stable order.
const std::vector<NoticeKind>& all_notice_kinds();
std::optional<NoticeKind> notice_kind_from_string(const std::string& name);

struct Notice {
  NoticeKind kind = NoticeKind::incident;
  std::chrono::system_clock::time_point at;
  std::string node;
  std::uint32_t job_id = 0;                 // 0: not about a job
  std::optional<std::uint32_t> uid;         // the job's owner, where known
  std::uint32_t attempt = 0;                // the job's restart count the notice is about
  std::string code;                         // the fault code, e.g. "GPU-XID-79"
  std::string message;                      // one line, as in the drain reason or timeline
  std::string action;                       // what was done: "drain", "reboot", "requeue", "resume", ...; "none"
  std::uint64_t request = 0;                // admin: the request it answers (healthctl waits for it); 0: none
};

class NoticeSink {
 public:
  virtual ~NoticeSink() = default;
  virtual void notify(const Notice& n) noexcept = 0;
};

// Hands every notice to each of its sinks, in the order they were added. Sinks are added before
// the engine starts and outlive it; notify() may then be called from the engine thread only.
class Notices final : public NoticeSink {
 public:
  void add(NoticeSink& sink) { sinks_.push_back(&sink); }
  void notify(const Notice& n) noexcept override {
    for (auto* s : sinks_) s->notify(n);
  }

 private:
  std::vector<NoticeSink*> sinks_;
};

}  // namespace ar::healthd
