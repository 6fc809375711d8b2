// One action's cost through Slurm's C API (SlurmApiClient, the code healthd runs) against the forked
// scontrol command it replaced, in one run, on a live cluster (SLURM_CONF):
//   drain:   drain a node, then resume it                       (2 RPCs / 2 forks)
//   requeue: requeue a running job, then (once Slurm's epilog has made it PENDING: that wait is
//            Slurm's, the same either way, and not timed) read it and release its hold with a begin
//            time; then wait until it runs again (not timed). The read is slurm_load_job for the
//            API, `scontrol show job -o` for the fork, as healthd did before each release.
// Alternates API and fork round by round, so a load change on the machine hits both alike. Prints one
// line per figure: "name median_ms p95_ms cpu_ms_per_action", API first, then fork.
//
// usage: ar_bench_slurm_calls --node n3 --job 42 --rounds 20 [--scontrol /usr/bin/scontrol]
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/process.hpp"
#include "actions/slurm_api_client.hpp"

using namespace ar::healthd;
using Clock = std::chrono::steady_clock;

namespace {

double cpu_ms_self_and_children() {
  rusage self{}, kids{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &kids);
  auto ms = [](const timeval& t) { return t.tv_sec * 1000.0 + t.tv_usec / 1000.0; };
  return ms(self.ru_utime) + ms(self.ru_stime) + ms(kids.ru_utime) + ms(kids.ru_stime);
}

struct Series {
  std::vector<double> wall_ms;
  double cpu_ms = 0;
  void print(const char* name) const {
    auto v = wall_ms;
    std::sort(v.begin(), v.end());
    if (v.empty()) return;
    const double median = v[v.size() / 2];
    const double p95 = v[std::min(v.size() - 1, static_cast<std::size_t>(0.95 * static_cast<double>(v.size() - 1) + 0.5))];
    std::printf("%s %.3f %.3f %.3f\n", name, median, p95, cpu_ms / static_cast<double>(v.size()));
  }
};

bool scontrol(const std::string& prog, std::vector<std::string> args, std::string* out = nullptr) {
  args.insert(args.begin(), prog);
  auto r = run_process(args, std::chrono::seconds(10));
  if (!r || r->timed_out || r->exit_code != 0) {
    std::fprintf(stderr, "bench: %s failed: %s\n", args[1].c_str(), r ? r->err.c_str() : r.error().c_str());
    return false;
  }
  if (out) *out = r->out;
  return true;
}

// Times fn (wall and CPU of this process and its children) into s.
template <class F>
bool timed(Series& s, F fn) {
  const double cpu0 = cpu_ms_self_and_children();
  const auto t0 = Clock::now();
  const bool ok = fn();
  s.wall_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  s.cpu_ms += cpu_ms_self_and_children() - cpu0;
  return ok;
}

bool wait_running(SlurmApiClient& api, std::uint32_t job, std::uint32_t restarts) {
  for (int i = 0; i < 600; ++i) {
    auto j = api.job(job);
    if (j && j->state == "RUNNING" && j->restart_count >= restarts) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::fprintf(stderr, "bench: job %u not running again\n", job);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Slurm action cost: C API against forked scontrol"};
  std::string node, prog = "/usr/bin/scontrol";
  std::uint32_t job = 0;
  int rounds = 20;
  app.add_option("--node", node, "a node to drain and resume")->required();
  app.add_option("--job", job, "a running batch job to requeue, again and again")->required();
  app.add_option("--rounds", rounds, "rounds of each");
  app.add_option("--scontrol", prog, "scontrol to fork");
  CLI11_PARSE(app, argc, argv);

  SlurmApiClient api(prog, std::chrono::seconds(10));
  Series drain_api, drain_fork, requeue_api, requeue_fork;
  std::uint32_t restarts = 0;
  if (auto j = api.job(job)) restarts = j->restart_count;

  for (int r = 0; r < rounds; ++r) {
    bool ok = timed(drain_api, [&] {
      return api.drain(node, "bench: drain cost").has_value() && api.resume(node).has_value();
    });
    ok = ok && timed(drain_fork, [&] {
      return scontrol(prog, {"update", "nodename=" + node, "state=drain", "reason=bench: drain cost"}) &&
             scontrol(prog, {"update", "nodename=" + node, "state=resume"});
    });
    // requeue through the API: requeue, read until PENDING (Slurm's epilog: not timed), release
    {
      Series one;
      ok = ok && timed(one, [&] { return api.requeue(job).has_value(); });
      std::optional<JobInfo> pending;
      for (int i = 0; ok && i < 500 && !pending; ++i) {
        auto j = api.job(job);
        if (j && j->state == "PENDING") pending = *j;
        else std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      ok = ok && pending && timed(one, [&] {
        auto j = api.job(job);  // healthd reads the job before each release
        if (!j) return false;
        JobUpdate u;
        u.begin = std::chrono::system_clock::to_time_t(j->submit_time) + 1;
        return api.update_job(job, u).has_value();
      });
      requeue_api.wall_ms.push_back(one.wall_ms.empty() ? 0 : one.wall_ms.front() + one.wall_ms.back());
      requeue_api.cpu_ms += one.cpu_ms;
    }
    ok = ok && wait_running(api, job, ++restarts);
    // the same through forked scontrol, parsing its text as healthd used to
    {
      Series one;
      ok = ok && timed(one, [&] { return scontrol(prog, {"requeue", std::to_string(job)}); });
      bool pending = false;
      for (int i = 0; ok && i < 500 && !pending; ++i) {
        auto j = api.job(job);  // the wait is Slurm's, the same for both: read the cheap way
        pending = j && j->state == "PENDING";
        if (!pending) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      ok = ok && pending && timed(one, [&] {
        std::string out;  // healthd read the job before each release
        return scontrol(prog, {"show", "job", std::to_string(job), "-o"}, &out) &&
               scontrol(prog, {"update", "jobid=" + std::to_string(job), "starttime=now+1"});
      });
      requeue_fork.wall_ms.push_back(one.wall_ms.empty() ? 0 : one.wall_ms.front() + one.wall_ms.back());
      requeue_fork.cpu_ms += one.cpu_ms;
    }
    ok = ok && wait_running(api, job, ++restarts);
    if (!ok) return 1;
  }
  drain_api.print("drain_resume_api");
  drain_fork.print("drain_resume_fork");
  requeue_api.print("requeue_release_api");
  requeue_fork.print("requeue_release_fork");
  return 0;
}
