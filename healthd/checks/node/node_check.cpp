#include "node_check.hpp"

#include <cstdio>

#include "checks/result_util.hpp"

namespace ar::healthd {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", v);
  return buf;
}

CheckResult cpus(const NodeSnapshot& s, const NodeConfig& c) {
  if (!s.cpus_online) return make_result("node.cpus", Status::error, s.cpus_online.error());
  const auto n = *s.cpus_online;
  CheckResult r;
  if (!c.expected_cpus)
    r = make_result("node.cpus", Status::ok, std::to_string(n) + " CPUs online (not judged)");
  else if (n < *c.expected_cpus)
    r = make_finding("node.cpus", "NODE-CPU-COUNT", Remedy::drain,
                     std::to_string(n) + " of " + std::to_string(*c.expected_cpus) + " CPUs online");
  else
    r = make_result("node.cpus", Status::ok, std::to_string(n) + " CPUs online");
  r.detail = {{"online", n}};
  if (c.expected_cpus) r.detail["expected"] = *c.expected_cpus;
  return r;
}

CheckResult memory(const NodeSnapshot& s, const NodeConfig& c) {
  if (!s.mem_total_kib) return make_result("node.memory", Status::error, s.mem_total_kib.error());
  const double have = static_cast<double>(*s.mem_total_kib) * 1024.0 / kGiB;
  CheckResult r;
  if (!c.min_memory_gib)
    r = make_result("node.memory", Status::ok, gib(have) + " of memory (not judged)");
  else if (have < *c.min_memory_gib)
    r = make_finding("node.memory", "NODE-MEM", Remedy::drain, gib(have) + " of memory, at least " + gib(*c.min_memory_gib) + " expected");
  else
    r = make_result("node.memory", Status::ok, gib(have) + " of memory");
  r.detail = {{"mem_total_kib", *s.mem_total_kib}};
  if (c.min_memory_gib) r.detail["min_gib"] = *c.min_memory_gib;
  return r;
}

CheckResult shm(const NodeSnapshot& s, const NodeConfig& c) {
  if (!s.shm_bytes) return make_result("node.shm", Status::error, s.shm_bytes.error());
  const double have = static_cast<double>(*s.shm_bytes) / kGiB;
  CheckResult r;
  if (c.min_shm_gib <= 0)
    r = make_result("node.shm", Status::ok, "/dev/shm is " + gib(have) + " (not judged)");
  else if (have < c.min_shm_gib)
    r = make_finding("node.shm", "NODE-SHM", Remedy::drain, "/dev/shm is " + gib(have) + ", at least " + gib(c.min_shm_gib) + " expected");
  else
    r = make_result("node.shm", Status::ok, "/dev/shm is " + gib(have));
  r.detail = {{"bytes", *s.shm_bytes}, {"min_gib", c.min_shm_gib}};
  return r;
}

CheckResult clock(const NodeSnapshot& s, const NodeConfig& c) {
  if (c.clock_action == Remedy::none) return make_result("node.clock", Status::ok, "not judged");
  if (!s.clock) return make_result("node.clock", Status::error, s.clock.error());
  CheckResult r = s.clock->unsynced
                      ? make_finding("node.clock", "NODE-CLOCK-UNSYNC", c.clock_action,
                                     "the system clock is not synchronised (adjtimex: STA_UNSYNC)")
                      : make_result("node.clock", Status::ok, "clock synchronised");
  r.detail = {{"unsynced", s.clock->unsynced}, {"max_error_us", s.clock->max_error_us}};
  return r;
}

CheckResult process(const NodeSnapshot& s, const std::string& name) {
  const auto check = "node.process." + name;
  if (!s.processes) return make_result(check, Status::error, s.processes.error());
  // The kernel keeps at most 15 characters of a command name.
  const auto comm = name.substr(0, 15);
  if (s.processes->contains(comm)) return make_result(check, Status::ok, name + " is running");
  return make_finding(check, "NODE-DAEMON-" + name, Remedy::drain, name + " is not running");
}

}  // namespace

std::vector<CheckResult> judge_node(const NodeSnapshot& snap, const NodeConfig& config) {
  std::vector<CheckResult> out{cpus(snap, config), memory(snap, config), shm(snap, config), clock(snap, config)};
  for (const auto& name : config.required_processes) out.push_back(process(snap, name));
  return out;
}

CheckKind node_check_kind() {
  return single_check_kind<NodeConfig>(node_section(), [](const NodeConfig& c, BuildContext& context) -> std::shared_ptr<Check> {
    if (!c.enabled) return nullptr;
    return std::make_shared<NodeCheck>(c, context.host_root);
  });
}

}  // namespace ar::healthd
