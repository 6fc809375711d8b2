// Reports one step's lifecycle to the local healthd, inside slurmstepd.
//
// The promise to users: the plugin never blocks a job for long and never fails one. So each message
// waits at most `timeout`, all messages of a step together at most `step_budget`, and the first
// failure turns reporting off for the rest of the step (logged once). One connection serves the whole
// step; if the daemon restarted in between, one reconnect is tried.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "auto_resume/protocol.hpp"
#include "auto_resume/unix_client.hpp"

namespace ar::plugin {

class StepReporter {
 public:
  using Clock = std::chrono::steady_clock;
  using Log = std::function<void(const std::string&)>;

  StepReporter(std::string socket_path, std::chrono::milliseconds timeout, std::chrono::milliseconds step_budget,
               Log log_error);

  // Sends one message and waits for the daemon's acknowledgement. Returns false when the message
  // was not delivered (and will never block past the limits above).
  bool report(const proto::Request& message);

  bool disabled() const { return disabled_; }
  std::chrono::milliseconds time_spent() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(spent_);
  }

 private:
  bool try_once(const std::string& framed, Clock::time_point deadline, std::string& error);
  void give_up(const std::string& why);

  std::string socket_path_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds step_budget_;
  Log log_error_;
  std::optional<UnixClient> client_;
  Clock::duration spent_{};
  bool disabled_ = false;
};

}  // namespace ar::plugin
