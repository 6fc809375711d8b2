// ar_bench_protocol: load generator for healthd's socket, speaking exactly the plugin's messages.
//
// N client threads each play slurmstepd for a sequence of steps: connect, step_start, one task_exit per
// task, step_end, close (the plugin keeps one connection per step, see plugin/step_reporter.cpp). All
// clients start together, so up to N steps are open at once; --hold-ms keeps each step open that long
// between its start and its end (many concurrent steps), --duration-s runs steps until that time has
// passed instead of a fixed count. Every request's latency (send to parsed reply, connect included for
// the first message of a step) is recorded; the summary gives requests per second and percentiles.
//
// Lifecycle messages are accepted from root only (SO_PEERCRED): run as root. The `node` field must be
// the daemon's node name. A refused or failed request counts as an error and is reported, never hidden.
// Timing figures are printed, never judged: the exit status is non-zero only when requests failed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "auto_resume/protocol.hpp"
#include "auto_resume/unix_client.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string socket;
  std::string node;
  unsigned clients = 16;
  unsigned steps = 100;  // per client; ignored with duration_s > 0
  double duration_s = 0;
  unsigned tasks = 1;
  unsigned hold_ms = 0;
  std::uint32_t job_base = 7000000;
  bool auto_resume = true;
  int wait_status = 0;
  unsigned timeout_ms = 2000;
  unsigned slow_ms = 200;  // the plugin's default timeout_ms: a reply later than this, it would not have waited for
  bool ping = false;  // send pings instead of the lifecycle messages (same count), as a baseline
  bool json = false;
  bool quiet = false;
};

struct ClientResult {
  std::vector<double> latency_ms;  // one per successful request
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t steps = 0;
};

// One request on an open connection; returns false (and records why) on any failure or refusal.
bool exchange(ar::UnixClient& client, const ar::proto::Request& message, const Options& o, ClientResult& r,
              Clock::time_point started) {
  auto line = client.request(ar::proto::encode(ar::proto::to_json(message)), Clock::now() + std::chrono::milliseconds(o.timeout_ms));
  std::string why;
  if (!line) {
    why = line.error();
  } else if (auto reply = ar::proto::parse_reply(*line); !reply) {
    why = "refused: " + reply.error().code + ": " + reply.error().message;
  }
  if (!why.empty()) {
    if (r.errors++ == 0) r.first_error = why;
    return false;
  }
  r.latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
  return true;
}

// One step as slurmstepd sees it; returns false when the connection broke.
bool one_step(unsigned client_index, std::uint32_t step_id, const Options& o, ClientResult& r) {
  const std::uint32_t job_id = o.job_base + client_index;
  auto t = Clock::now();
  auto client = ar::UnixClient::connect(o.socket, t + std::chrono::milliseconds(o.timeout_ms));
  if (!client) {
    if (r.errors++ == 0) r.first_error = client.error();
    return false;
  }
  if (o.ping) {
    for (unsigned i = 0; i < o.tasks + 2; ++i, t = Clock::now())
      if (!exchange(*client, ar::proto::Ping{}, o, r, t)) return false;
    ++r.steps;
    return true;
  }
  ar::proto::StepStart start{job_id, step_id, o.node, 0, o.auto_resume, 0, std::nullopt, std::nullopt};
  if (!exchange(*client, start, o, r, t)) return false;
  if (o.hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.hold_ms));
  for (unsigned task = 0; task < o.tasks; ++task) {
    ar::proto::TaskExit exit{job_id, step_id, o.node, task, o.wait_status};
    if (!exchange(*client, exit, o, r, Clock::now())) return false;
  }
  ar::proto::StepEnd end{job_id, step_id, o.node};
  if (!exchange(*client, end, o, r, Clock::now())) return false;
  ++r.steps;
  return true;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ar_bench_protocol: the plugin's messages from many clients to a running healthd; prints req/s and latency percentiles"};
  app.add_option("--socket", o.socket, "healthd socket")->required();
  app.add_option("--node", o.node, "the daemon's node name (messages for another node are refused)")->required();
  app.add_option("--clients", o.clients, "concurrent clients (each one a slurmstepd)")->check(CLI::Range(1u, 4096u))->capture_default_str();
  app.add_option("--steps", o.steps, "steps per client")->check(CLI::Range(1u, 10000000u))->capture_default_str();
  app.add_option("--duration-s", o.duration_s, "run steps for this long instead of --steps")->check(CLI::Range(0.0, 86400.0));
  app.add_option("--tasks", o.tasks, "tasks per step (one task_exit each)")->check(CLI::Range(1u, 100000u))->capture_default_str();
  app.add_option("--hold-ms", o.hold_ms, "keep each step open this long between start and end")->capture_default_str();
  app.add_option("--job-base", o.job_base, "job id of client 0 (client i uses job-base + i)")->capture_default_str();
  app.add_option("--auto-resume", o.auto_resume, "the steps' auto-resume flag (0|1)")->capture_default_str();
  app.add_option("--wait-status", o.wait_status, "raw wait status of every task (non-zero: a failing step, which makes healthd sweep)")
      ->capture_default_str();
  app.add_option("--timeout-ms", o.timeout_ms, "deadline of one request")->check(CLI::Range(1u, 600000u))->capture_default_str();
  app.add_option("--slow-ms", o.slow_ms, "count replies slower than this (the plugin's timeout_ms, 200 by default)")
      ->capture_default_str();
  app.add_flag("--ping", o.ping, "send as many pings instead (the cheapest request: a baseline without the registry)");
  app.add_flag("--json", o.json, "print the summary as one JSON object");
  app.add_flag("-q,--quiet", o.quiet, "no human-readable summary (with --json)");
  CLI11_PARSE(app, argc, argv);

  std::vector<ClientResult> results(o.clients);
  std::latch ready(static_cast<std::ptrdiff_t>(o.clients) + 1);
  std::atomic<bool> stop{false};
  std::vector<std::jthread> threads;
  threads.reserve(o.clients);
  for (unsigned c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      auto& r = results[c];
      r.latency_ms.reserve(o.duration_s > 0 ? 4096 : static_cast<std::size_t>(o.steps) * (o.tasks + 2));
      ready.arrive_and_wait();
      for (std::uint32_t step = 0;; ++step) {
        if (o.duration_s > 0 ? stop.load(std::memory_order_relaxed) : step >= o.steps) break;
        one_step(c, step, o, r);
      }
    });
  }
  ready.arrive_and_wait();
  const auto t0 = Clock::now();
  if (o.duration_s > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.duration_s));
    stop = true;
  }
  threads.clear();  // joins
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();

  std::vector<double> all;
  std::uint64_t errors = 0, steps = 0;
  std::string first_error;
  for (auto& r : results) {
    all.insert(all.end(), r.latency_ms.begin(), r.latency_ms.end());
    errors += r.errors;
    steps += r.steps;
    if (first_error.empty()) first_error = r.first_error;
  }
  std::sort(all.begin(), all.end());
  const double rps = wall_s > 0 ? static_cast<double>(all.size()) / wall_s : 0;
  const auto slow = static_cast<std::uint64_t>(all.end() - std::upper_bound(all.begin(), all.end(), static_cast<double>(o.slow_ms)));
  nlohmann::json summary{{"message", o.ping ? "ping" : "lifecycle"},
                         {"clients", o.clients},
                         {"tasks_per_step", o.tasks},
                         {"hold_ms", o.hold_ms},
                         {"steps", steps},
                         {"requests", all.size()},
                         {"errors", errors},
                         {"slow", slow},
                         {"slow_ms", o.slow_ms},
                         {"first_error", first_error},
                         {"wall_s", wall_s},
                         {"rps", rps},
                         {"p50_ms", percentile(all, 50)},
                         {"p90_ms", percentile(all, 90)},
                         {"p99_ms", percentile(all, 99)},
                         {"max_ms", all.empty() ? 0.0 : all.back()}};
  if (!o.quiet) {
    if (o.ping)
      std::printf("protocol: %u clients, %llu rounds of %u pings: %zu requests in %.2f s\n", o.clients,
                  static_cast<unsigned long long>(steps), o.tasks + 2, all.size(), wall_s);
    else
      std::printf("protocol: %u clients, %llu steps of (step_start + %u task_exit + step_end): %zu requests in %.2f s\n",
                  o.clients, static_cast<unsigned long long>(steps), o.tasks, all.size(), wall_s);
    std::printf("  throughput  %.0f requests/s\n", rps);
    std::printf("  latency ms  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", percentile(all, 50), percentile(all, 90),
                percentile(all, 99), all.empty() ? 0.0 : all.back());
    std::printf("  slower than %u ms: %llu\n", o.slow_ms, static_cast<unsigned long long>(slow));
    std::printf("  errors      %llu%s%s\n", static_cast<unsigned long long>(errors), errors ? " (first: " : "",
                errors ? (first_error + ")").c_str() : "");
  }
  if (o.json) std::printf("%s\n", summary.dump().c_str());
  return errors == 0 ? 0 : 1;
}
