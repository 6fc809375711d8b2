#include "step_reporter.hpp"

#include <algorithm>

namespace ar::plugin {

StepReporter::StepReporter(std::string socket_path, std::chrono::milliseconds timeout,
                           std::chrono::milliseconds step_budget, Log log_error)
    : socket_path_(std::move(socket_path)),
      timeout_(timeout),
      step_budget_(step_budget),
      log_error_(std::move(log_error)) {}

bool StepReporter::report(const proto::Request& message) {
  if (disabled_) return false;
  const auto start = Clock::now();
  const auto left = step_budget_ - spent_;
  if (left <= Clock::duration::zero()) {
    give_up("the step's time budget of " + std::to_string(step_budget_.count()) + " ms is spent");
    return false;
  }
  const auto deadline = start + std::min<Clock::duration>(timeout_, left);
  const std::string framed = proto::encode(proto::to_json(message));

  std::string error;
  bool reused = client_.has_value();
  bool ok = try_once(framed, deadline, error);
  // A kept connection may have been closed by a daemon restart since the last message: reconnect once.
  if (!ok && reused && Clock::now() < deadline) ok = try_once(framed, deadline, error);
  spent_ += Clock::now() - start;
  if (!ok) give_up(error);
  return ok;
}

bool StepReporter::try_once(const std::string& framed, Clock::time_point deadline, std::string& error) {
  if (!client_) {
    auto c = UnixClient::connect(socket_path_, deadline);
    if (!c) {
      error = c.error();
      return false;
    }
    client_.emplace(std::move(*c));
  }
  auto line = client_->request(framed, deadline);
  if (!line) {
    client_.reset();
    error = line.error();
    return false;
  }
  auto reply = proto::parse_reply(*line);
  if (!reply) {
    // The daemon answered but refused the message: a protocol mismatch, not an outage. Keep the
    // connection but say so; the job is unaffected either way.
    error = "healthd refused a message: " + reply.error().code + ": " + reply.error().message;
    return false;
  }
  return true;
}

void StepReporter::give_up(const std::string& why) {
  disabled_ = true;
  client_.reset();
  log_error_("healthd at " + socket_path_ + " not reachable (" + why +
             "); this step runs on without auto-resume reporting");
}

}  // namespace ar::plugin
