#include "commands.hpp"

#include <csignal>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "auto_resume/protocol.hpp"
#include "clock_text.hpp"
#include "daemon_client.hpp"
#include "exit_codes.hpp"
#include "format.hpp"
#include "reply_fields.hpp"
#include "text.hpp"

namespace ar::healthctl {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// JSON for machines: pure ASCII (every other character \u-escaped), so no byte of it is a
// terminal control whatever the reply held.
std::string json_text(const nlohmann::json& j, int indent = 2) {
  return j.dump(indent, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) + "\n";
}

void complain(const Context& c, const std::string& what) { *c.err << "healthctl: " << c.command << ": " << what << "\n"; }

// The time left before `deadline`, at least 1 ms (the last call still gets a chance).
milliseconds left(Clock::time_point deadline) {
  return std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

// One request; an error is printed and becomes the exit status.
std::expected<nlohmann::json, int> ask(const Context& c, const nlohmann::json& request, milliseconds timeout) {
  auto reply = call_daemon(c.socket, request, timeout);
  if (!reply) {
    complain(c, reply.error().describe(c.socket));
    return std::unexpected(exit_code(reply.error().outcome()));
  }
  return std::move(*reply);
}

RenderOptions now_options(const Context& c) {
  RenderOptions o = c.render;
  o.now_ms = now_epoch_ms();
  return o;
}

// Formatting is pure, but of outside data: should it throw anyway, say so rather than abort.
template <typename F>
int print_or_complain(const Context& c, F&& print) {
  try {
    return print();
  } catch (const std::exception& e) {
    complain(c, std::string("the daemon's reply could not be shown: ") + e.what());
    return exit_code(Outcome::unreachable);
  }
}

int show_status(const Context& c, const nlohmann::json& reply) {
  return print_or_complain(c, [&] {
    *c.out << (c.json ? json_text(reply) : format_status(reply, now_options(c)));
    return exit_code(health_outcome(object_of(reply, "health")));
  });
}

volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int) { interrupted = 1; }

}  // namespace

int run_ping(const Context& c) {
  auto reply = ask(c, proto::to_json(proto::Request{proto::Ping{}}), c.timeout);
  if (!reply) return reply.error();
  *c.out << (c.json ? json_text(*reply) : format_ping(*reply));
  return exit_code(Outcome::healthy);
}

int run_status(const Context& c) {
  auto reply = ask(c, proto::to_json(proto::Request{proto::StatusQuery{}}), c.timeout);
  if (!reply) return reply.error();
  return show_status(c, *reply);
}

int run_check(const Context& c, bool now) {
  const auto deadline = Clock::now() + c.timeout;
  std::int64_t wanted = 0;
  if (now) {
    auto queued = ask(c, proto::to_json(proto::Request{proto::CheckNow{}}), left(deadline));
    if (!queued) return queued.error();
    wanted = int_of(*queued, "sweep");
  }
  // The sweep runs on the daemon's engine; its results show in the status once it is done.
  for (;;) {
    auto reply = ask(c, proto::to_json(proto::Request{proto::StatusQuery{}}), left(deadline));
    if (!reply) return reply.error();
    if (int_of(object_of(*reply, "health"), "sweep_seq") >= wanted) return show_status(c, *reply);
    if (Clock::now() >= deadline) {
      complain(c, fmt::format("the sweep did not finish within {} ms (--timeout-ms)", c.timeout.count()));
      return exit_code(Outcome::unreachable);
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
}

int run_gpus(const Context& c) {
  auto reply = ask(c, proto::to_json(proto::Request{proto::StatusQuery{}}), c.timeout);
  if (!reply) return reply.error();
  return print_or_complain(c, [&] {
    const auto& gpus = array_of(object_of(*reply, "health"), "gpus");
    if (c.json) *c.out << json_text({{"node", text_of(*reply, "node")}, {"gpus", gpus}});
    else *c.out << format_gpus(*reply, now_options(c));
    return exit_code(gpus_outcome(gpus));
  });
}

int run_jobs(const Context& c) {
  auto reply = ask(c, proto::to_json(proto::Request{proto::JobsQuery{}}), c.timeout);
  if (!reply) return reply.error();
  return print_or_complain(c, [&] {
    *c.out << (c.json ? json_text(*reply) : format_jobs(*reply, now_options(c)));
    return exit_code(Outcome::healthy);
  });
}

int run_explain(const Context& c, std::uint32_t job_id) {
  auto reply = ask(c, proto::to_json(proto::Request{proto::ExplainQuery{job_id}}), c.timeout);
  if (!reply) return reply.error();
  return print_or_complain(c, [&] {
    *c.out << (c.json ? json_text(*reply) : format_explain(*reply, now_options(c)));
    return exit_code(Outcome::healthy);
  });
}

int run_events(const Context& c, std::uint32_t limit) {
  auto reply = ask(c, proto::to_json(proto::Request{proto::EventsQuery{limit}}), c.timeout);
  if (!reply) return reply.error();
  return print_or_complain(c, [&] {
    *c.out << (c.json ? json_text(*reply) : format_events(*reply, now_options(c)));
    return exit_code(Outcome::healthy);
  });
}

int run_watch(const Context& c, std::chrono::seconds every) {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends healthctl at once, even inside a call
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  while (!interrupted) {
    const auto started = Clock::now();
    const auto o = now_options(c);
    // A frame's call must not outlast the frame: a daemon slower than that is shown as not answering.
    const auto timeout = std::min(c.timeout, std::chrono::duration_cast<milliseconds>(every));
    auto reply = call_daemon(c.socket, proto::to_json(proto::Request{proto::StatusQuery{}}), timeout);
    std::string frame;
    if (c.json) {
      frame = reply ? json_text(*reply, -1)
                    : json_text({{"at_ms", o.now_ms}, {"error", reply.error().describe(c.socket)}}, -1);
    } else {
      frame = fit(fmt::format("every {}s: healthctl status  {}  (Ctrl-C ends)", every.count(),
                              local_datetime(o.now_ms)),
                  o.limit(), o.ellipsis) +
              "\n\n";
      if (reply) {
        try {
          frame += format_status(*reply, o);
        } catch (const std::exception& e) {
          frame += std::string("the daemon's reply could not be shown: ") + e.what() + "\n";
        }
      } else {
        for (const auto& line : wrap(reply.error().describe(c.socket) + fmt::format("; asking again every {}s", every.count()),
                                     o.limit()))
          frame += line + "\n";
      }
    }
    // On a terminal each frame replaces the last (home, clear); to a pipe or file they follow on.
    if (c.tty && !c.json) *c.out << "\x1b[H\x1b[2J";
    *c.out << frame;
    if (!c.tty && !c.json) *c.out << "\n";
    c.out->flush();
    while (!interrupted && Clock::now() - started < every) std::this_thread::sleep_for(milliseconds(50));
  }
  return exit_code(Outcome::healthy);
}

int run_admin(const Context& c, const AdminAction& a) {
  const auto deadline = Clock::now() + c.timeout;
  proto::Request request = proto::AdminDrain{a.reason};
  if (a.kind == AdminAction::Kind::resume) request = proto::AdminResume{a.force};
  if (a.kind == AdminAction::Kind::clear) request = proto::AdminClear{a.code};
  const auto sent_ms = now_epoch_ms();
  auto reply = ask(c, proto::to_json(request), left(deadline));
  if (!reply) return reply.error();
  const auto since = has_number(*reply, "at_ms") ? int_of(*reply, "at_ms") : sent_ms;
  // The daemon numbers each request; its `admin` event carries the number (an older daemon's does
  // not: then the first admin event since the reply is taken).
  const bool numbered = has_number(*reply, "request");
  const auto request_id = numbered ? int_of(*reply, "request") : 0;
  const auto node = text_of(*reply, "node");
  if (!c.json)
    *c.out << fmt::format("healthd{}: {}\n", node.empty() ? "" : " on " + node, text_of(*reply, "message", "(no message)"));
  c.out->flush();
  // The reply says the action is queued; the `admin` event says what came of it.
  nlohmann::json confirmed = nullptr;
  while (confirmed.is_null() && Clock::now() < deadline) {
    auto events = call_daemon(c.socket, proto::to_json(proto::Request{proto::EventsQuery{200}}), left(deadline));
    if (events) {
      for (const auto& e : array_of(*events, "events")) {
        if (text_of(e, "kind") != "admin") continue;
        if (numbered ? (has_number(e, "request") && int_of(e, "request") == request_id) : int_of(e, "at_ms") >= since) {
          confirmed = e;
          break;
        }
      }
    }
    if (confirmed.is_null()) std::this_thread::sleep_for(std::min(milliseconds(100), left(deadline)));
  }
  // "none": carried out, and nothing came of it (someone else's drain without --force, say).
  const bool nothing_done = !confirmed.is_null() && text_of(confirmed, "action") == "none";
  if (c.json) {
    *c.out << json_text({{"reply", *reply}, {"confirmed", confirmed}});
  } else if (!confirmed.is_null()) {
    *c.out << fmt::format("{}: {}\n", nothing_done ? "not done" : "done", text_of(confirmed, "message", "(no message)"));
  } else {
    *c.out << fmt::format(
        "queued, not confirmed within {} ms: healthd carries it out as soon as its engine is free "
        "(healthctl events shows it once done)\n",
        c.timeout.count());
  }
  if (confirmed.is_null()) return exit_code(Outcome::warnings);
  return exit_code(nothing_done ? Outcome::conflict : Outcome::healthy);
}

}  // namespace ar::healthctl
