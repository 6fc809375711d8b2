#include "telemetry/metrics.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include "telemetry/metrics_endpoint.hpp"
#include "telemetry/metrics_series.hpp"
#include "telemetry/metrics_textfile.hpp"

namespace ar::healthd {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

// A Slurm call takes a few ms when slurmctld is well and up to [slurm] timeout_s when it is not.
const Histogram::BucketBoundaries kSlurmBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                   0.25,  0.5,    1,     2.5,  5,     10,   30};
// A sweep is bounded by check_deadline_s (10 s by default), a DCGM diagnostic longer.
const Histogram::BucketBoundaries kSweepBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

// healthd_check_status's values, and healthd_gpu_health's numbers (docs/metrics.md): Status, in its order.
constexpr Status kStatuses[] = {Status::ok, Status::warn, Status::fault, Status::error};
double gpu_health_value(Status s) { return static_cast<double>(static_cast<int>(s)); }


double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// [metrics] listen: "A.B.C.D:PORT" or "localhost:PORT". inet_pton takes only the four decimal
// numbers (no "999.1.1.1" read as some other address, no octal, no shorthand), and no name is looked
// up (no DNS wait at start). The endpoint has no IPv6 (config.cpp refuses it before this).
std::expected<sockaddr_in, std::string> endpoint_address(const std::string& listen) {
  const auto colon = listen.rfind(':');
  const std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  const std::string port = colon == std::string::npos ? std::string() : listen.substr(colon + 1);
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }) ||
      std::stoul(port) > 65535)
    return std::unexpected(std::string("must be \"HOST:PORT\" with a port number"));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::stoul(port)));
  if (inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &address.sin_addr) != 1)
    return std::unexpected("the endpoint takes an IPv4 address (\"127.0.0.1\", \"0.0.0.0\" for every address) or "
                           "localhost, not " + host + (host.starts_with('[') ? " (the endpoint takes no IPv6 address)" : ""));
  return address;
}

}  // namespace

struct Metrics::Impl {
  Impl(std::string node_name, std::string version)
      : node(label_value(node_name)), started_ms(static_cast<std::int64_t>(now_seconds() * 1000)) {
    build_info.Add({{"version", label_value(version)}}).Set(1);
  }

  // Every family of the node's healthd, all in one registry: what /metrics and the textfile show.
  void observe(const NodeHealth& health);
  void observe_node(const NodeHealth& health);
  void observe_checks(const std::vector<CheckResult>& results);
  void observe_gpus(const NodeHealth& health);
  void count_xids(const std::vector<CheckResult>& results);
  void observe_efa(const std::vector<EfaPortReading>& ports);
  void observe_neuron(const std::vector<NeuronReading>& devices);
  void count_notice(const Notice& n);

  const std::string node;
  const std::int64_t started_ms;  // XID events older than this were counted by an earlier healthd
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();

  // One mutex for the bookkeeping below (which label sets exist, what was counted): short, never
  // held across I/O. prometheus-cpp locks its own families against a scrape.
  mutable std::mutex mutex;

  prometheus::Family<Counter>& overflow_family =
      family_in<Counter>(*registry, "healthd_metrics_label_overflow_total",
                         "Label sets left out of (gauges) or counted as \"other\" in (counters) a family past its cap, by family.");
  std::map<std::string, Counter*> overflow_counters;
  OverflowCounter overflow = [this](const std::string& family) {
    auto& c = overflow_counters[family];
    if (c == nullptr) c = &overflow_family.Add({{"family", family}});
    c->Increment();
  };

  prometheus::Family<Gauge>& build_info =
      family_in<Gauge>(*registry, "healthd_build_info", "Always 1; the running healthd's version in its label.");

  // The node's verdict and the responder's state.
  Gauge& node_faulty =
      family_in<Gauge>(*registry, "healthd_node_faulty", "1 while healthd judges the node faulty, else 0.").Add({});
  SnapshotFamily<Gauge> node_fault_info{*registry, "healthd_node_fault_info",
                                        "1 for the fault code the node is out for; absent while it is healthy.", overflow};
  Gauge& actions_pending =
      family_in<Gauge>(*registry, "healthd_actions_pending", "Journal entries (drain, requeue, resume, ...) not yet carried out.")
          .Add({});
  Gauge& suspicions =
      family_in<Gauge>(*registry, "healthd_suspicions",
                       "Stalls this node was named the suspect of within [policy] lemon_window_s (the lemon rule counts them).")
          .Add({});
  Gauge& stragglers = family_in<Gauge>(*registry, "healthd_stragglers",
                                       "Jobs whose ranks on this node run slower than the job's median by more than "
                                       "[policy] straggler_share, now.")
                          .Add({});
  Counter& straggler_reports = family_in<Counter>(*registry, "healthd_straggler_reports_total",
                                                  "Times this node was found a straggler of a job.")
                                   .Add({});
  Gauge& last_sweep = family_in<Gauge>(*registry, "healthd_last_sweep_timestamp_seconds",
                                       "When the engine last finished a sweep of its checks (Unix time).")
                          .Add({});
  Histogram& sweep_duration =
      family_in<Histogram>(*registry, "healthd_sweep_duration_seconds", "How long each sweep of the checks took.")
          .Add({}, kSweepBuckets);
  std::optional<std::uint64_t> last_sweep_seq;

  // Each check's last result.
  SnapshotFamily<Gauge> check_status{*registry, "healthd_check_status",
                                     "1 for each check's current status (ok, warn, fault, error), 0 for the other three.",
                                     overflow, kMaxSeries * std::size(kStatuses)};
  SnapshotFamily<Gauge> check_duration{*registry, "healthd_check_duration_seconds", "How long each check's last run took.",
                                       overflow};
  SnapshotFamily<Gauge> check_last_run{*registry, "healthd_check_last_run_timestamp_seconds",
                                       "When each check last ran (Unix time).", overflow};

  // Per device, with dcgm-exporter's labels on the GPUs.
  SnapshotFamily<Gauge> gpu_health{*registry, "healthd_gpu_health",
                                   "Each GPU's health as healthd judges it: 0 ok, 1 warn, 2 fault, 3 error (unknown).",
                                   overflow};
  SnapshotFamily<Gauge> gpu_xid_last{*registry, "healthd_gpu_xid_last",
                                     "The newest XID healthd holds for each GPU (0: none).", overflow};
  std::set<Labels> last_gpus;  // kept, at 3, while NVML itself fails
  SnapshotFamily<Gauge> efa_up{*registry, "healthd_efa_device_up", "1 when an EFA port is ACTIVE, else 0.", overflow};
  SnapshotFamily<Gauge> neuron_healthy{*registry, "healthd_neuron_device_healthy",
                                       "1 when a Neuron device reports no unhealthy component and no uncorrectable error, else 0.",
                                       overflow};

  // Counted from the XID check's events, each event once.
  CappedFamily<Counter> xid_events{*registry, "healthd_xid_events_total", "GPU XID events, by XID number.", overflow};
  struct XidSeen {
    std::uint64_t count = 0;
  };
  std::map<std::pair<std::uint64_t, std::string>, XidSeen> xids_seen;  // by (xid, GPU address)
  bool xids_baselined = false;

  // Counted from notices.
  CappedFamily<Counter> incidents{*registry, "healthd_incidents_total", "Faults found that take the node out (new episodes), by code; under report_only too, when nothing is done.",
                                  overflow};
  CappedFamily<Counter> drains{*registry, "healthd_drains_total",
                               "Drains healthd made, by code and action (drain, or reboot through Slurm).", overflow};
  CappedFamily<Counter> requeues{*registry, "healthd_requeues_total", "Auto-resume jobs requeued, by the code of the fault.",
                                 overflow};
  Counter& resumes = family_in<Counter>(*registry, "healthd_resumes_total", "Requeued jobs seen running again.").Add({});
  Counter& resume_caps = family_in<Counter>(*registry, "healthd_resume_caps_reached_total",
                                            "Jobs whose resume cap was reached: they ended as they would without healthd.")
                             .Add({});
  Counter& node_returns =
      family_in<Counter>(*registry, "healthd_node_returns_total", "Times healthd resumed its own drain: the node back in service.")
          .Add({});
  Counter& checkpoint_signals = family_in<Counter>(*registry, "healthd_checkpoint_signals_total",
                                                   "Auto-resume jobs signalled to checkpoint ahead of an announced fault.")
                                    .Add({});
  CappedFamily<Counter> action_failures{*registry, "healthd_action_failures_total",
                                        "Actions that failed action_failing_after tries in a row (once per action), by kind.",
                                        overflow};
  CappedFamily<Counter> admin_actions{*registry, "healthd_admin_actions_total",
                                      "An admin's drains, resumes and clears through healthctl, by action.", overflow};
  CappedFamily<Counter> cure_steps{*registry, "healthd_cure_steps_total",
                                   "Steps of fault cures (reset_gpu, replace, deep_check; none: a chain exhausted), by step and code.",
                                   overflow};

  // Counted where they happen.
  CappedFamily<Histogram> slurm_call_duration{*registry, "healthd_slurm_call_duration_seconds",
                                              "How long each call to Slurm took, as the caller waited (up to [slurm] timeout_s).",
                                              overflow};
  CappedFamily<Counter> slurm_calls{*registry, "healthd_slurm_calls_total",
                                    "Calls to Slurm, by call and whether slurmctld answered (an error answer counts).", overflow};
  CappedFamily<Counter> protocol_errors{*registry, "healthd_protocol_errors_total",
                                        "Messages refused on healthd's socket, by error code.", overflow};
  CappedFamily<Counter> webhook_deliveries{*registry, "healthd_webhook_deliveries_total",
                                           "Webhook deliveries, by outcome (sent, failed, dropped, retry).", overflow};

  // The outlets: written only by start() and stop(), on the thread that owns the Metrics.
  std::unique_ptr<MetricsEndpoint> endpoint;
  std::unique_ptr<TextfileWriter> writer;
};

void Metrics::Impl::observe(const NodeHealth& health) {
  std::lock_guard lock(mutex);
  // The health is also published between sweeps (after journal work): a sweep is counted once.
  if (health.sweep_seq > 0 && last_sweep_seq != health.sweep_seq) {
    last_sweep_seq = health.sweep_seq;
    sweep_duration.Observe(health.sweep_ms / 1000);
    last_sweep.Set(now_seconds());
  }
  observe_node(health);
  if (health.sweep_seq == 0) return;  // no sweep yet: no check has a result to show
  observe_checks(health.results);
  observe_gpus(health);
  count_xids(health.results);
  observe_efa(health.devices.efa_ports);
  observe_neuron(health.devices.neuron_devices);
}

void Metrics::Impl::observe_node(const NodeHealth& health) {
  const auto& standing = health.standing;
  node_faulty.Set(standing.faulty ? 1 : 0);
  node_fault_info.begin();
  if (standing.faulty && !standing.fault_code.empty()) node_fault_info.set({{"code", label_value(standing.fault_code)}}, 1);
  node_fault_info.end();
  actions_pending.Set(static_cast<double>(health.pending_actions));
  suspicions.Set(static_cast<double>(health.suspicions));
  stragglers.Set(static_cast<double>(health.stragglers));
}

void Metrics::Impl::observe_checks(const std::vector<CheckResult>& results) {
  struct Summary {
    Status status = Status::ok;
    double duration_s = 0, at_s = 0;
  };
  std::map<std::string, Summary> by_check;  // a check of several results (one per mount) is one series
  for (const auto& r : results) {
    if (r.check.empty()) continue;
    auto [it, added] = by_check.try_emplace(label_value(r.check));
    auto& s = it->second;
    // A fault first, then a check that could not look, then a warning.
    if (added || display_rank(r.status) > display_rank(s.status)) s.status = r.status;
    s.duration_s = std::max(s.duration_s, std::chrono::duration<double>(r.duration).count());
    s.at_s = std::max(s.at_s, std::chrono::duration<double>(r.at.time_since_epoch()).count());
  }
  check_status.begin();
  check_duration.begin();
  check_last_run.begin();
  for (const auto& [name, s] : by_check) {
    for (const auto status : kStatuses)
      check_status.set({{"check", name}, {"status", to_string(status)}}, status == s.status ? 1 : 0);
    check_duration.set({{"check", name}}, s.duration_s);
    check_last_run.set({{"check", name}}, s.at_s);
  }
  check_status.end();
  check_duration.end();
  check_last_run.end();
}

void Metrics::Impl::observe_gpus(const NodeHealth& health) {
  const auto& gpus = health.devices.gpus;
  const bool nvml_failing = std::any_of(health.results.begin(), health.results.end(), [](const CheckResult& r) {
    return r.check == "gpu.nvml" && (r.status == Status::fault || r.status == Status::error);
  });
  gpu_health.begin();
  gpu_xid_last.begin();
  if (gpus.empty() && nvml_failing) {
    // NVML hung or lost its device list: the GPUs are still there, healthd just cannot see them. They
    // stay on the dashboards as "error" rather than vanish.
    for (const auto& labels : last_gpus) {
      gpu_health.set(labels, gpu_health_value(Status::error));
      (void)gpu_xid_last.at(labels);
    }
  } else {
    last_gpus.clear();
    for (const auto& g : gpus) {
      // dcgm-exporter's label names and values (gpu is the index), so the two join.
      Labels labels = {{"gpu", std::to_string(g.index)},
                       {"UUID", label_value(g.uuid)},
                       {"pci_bus_id", label_value(g.bus_id)},
                       {"modelName", label_value(g.model)},
                       {"Hostname", node}};
      gpu_health.set(labels, gpu_health_value(g.health));
      gpu_xid_last.set(labels, g.last_xid);
      last_gpus.insert(std::move(labels));
    }
  }
  gpu_health.end();
  gpu_xid_last.end();
}

// Counted from the XID check's tallies, each event once however many sweeps show it.
void Metrics::Impl::count_xids(const std::vector<CheckResult>& results) {
  auto xid_result = std::find_if(results.begin(), results.end(), [](const CheckResult& r) { return r.check == "gpu_xid"; });
  if (xid_result == results.end()) return;
  std::map<std::pair<std::uint64_t, std::string>, XidSeen> now;
  for (const auto& t : xid_result->xids) {
    const auto key = std::make_pair(std::uint64_t{t.xid}, t.gpu);
    std::uint64_t fresh = 0;
    if (auto it = xids_seen.find(key); it != xids_seen.end()) {
      // Counts only grow while the XID is tracked; a smaller one is a new episode after it expired.
      fresh = t.count >= it->second.count ? t.count - it->second.count : t.count;
    } else {
      // Remembered from before this healthd started (its state file): counted by the one before.
      const auto last_ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.last.time_since_epoch()).count();
      fresh = !xids_baselined && last_ms < started_ms ? 0 : t.count;
    }
    now[key].count = t.count;
    if (fresh > 0) xid_events.at({{"xid", std::to_string(t.xid)}}).Increment(static_cast<double>(fresh));
  }
  xids_seen = std::move(now);
  xids_baselined = true;
}

void Metrics::Impl::observe_efa(const std::vector<EfaPortReading>& ports) {
  efa_up.begin();
  for (const auto& p : ports) efa_up.set({{"device", label_value(p.device)}, {"port", label_value(p.port)}}, p.active ? 1 : 0);
  efa_up.end();
}

void Metrics::Impl::observe_neuron(const std::vector<NeuronReading>& devices) {
  std::map<std::string, bool> healthy;  // by device: healthy only while every reading of it says so
  for (const auto& n : devices) {
    if (n.device.empty()) continue;
    auto [it, added] = healthy.try_emplace(n.device, true);
    it->second = it->second && n.healthy;
  }
  neuron_healthy.begin();
  for (const auto& [device, ok] : healthy) neuron_healthy.set({{"device", label_value(device)}}, ok ? 1 : 0);
  neuron_healthy.end();
}

void Metrics::Impl::count_notice(const Notice& n) {
  const auto code = label_value(n.code);
  const auto action = label_value(n.action);
  switch (n.kind) {
    case NoticeKind::incident: incidents.at({{"code", code}}).Increment(); break;
    case NoticeKind::drain: drains.at({{"code", code}, {"action", action}}).Increment(); break;
    case NoticeKind::requeue: requeues.at({{"code", code}}).Increment(); break;
    case NoticeKind::resumed: resumes.Increment(); break;
    case NoticeKind::resume_cap: resume_caps.Increment(); break;
    case NoticeKind::node_returned: node_returns.Increment(); break;
    case NoticeKind::signal: checkpoint_signals.Increment(); break;
    case NoticeKind::action_failing: action_failures.at({{"kind", action}}).Increment(); break;
    case NoticeKind::admin: admin_actions.at({{"action", action}}).Increment(); break;
    case NoticeKind::cure: cure_steps.at({{"step", action}, {"code", code}}).Increment(); break;
    case NoticeKind::straggler: straggler_reports.Increment(); break;
  }
}

Metrics::Metrics(std::string node, std::string version) : impl_(std::make_unique<Impl>(std::move(node), std::move(version))) {}

Metrics::~Metrics() { stop(); }

std::expected<void, std::string> Metrics::start(const MetricsConfig& config) {
  stop();
  if (!config.listen.empty()) {
    const auto address = endpoint_address(config.listen);
    if (!address) return std::unexpected("metrics: cannot listen on " + config.listen + " ([metrics] listen): " + address.error());
    // A listener of our own (telemetry/metrics_endpoint.hpp): any local user can connect, and no
    // number of slow connections may keep a scraper out.
    auto endpoint = MetricsEndpoint::open(*address, [this] { return text(); });
    if (!endpoint) return std::unexpected("metrics: cannot listen on " + config.listen + " ([metrics] listen): " + endpoint.error());
    impl_->endpoint = std::move(*endpoint);
  }
  if (!config.textfile.empty())
    impl_->writer = std::make_unique<TextfileWriter>(config.textfile, config.textfile_interval, [this] { return text(); });
  return {};
}

void Metrics::stop() {
  if (!impl_) return;
  impl_->writer.reset();   // writes a last time, then joins
  impl_->endpoint.reset();  // closes the port and every connection, joins its thread
}

std::optional<int> Metrics::listening_port() const {
  if (!impl_->endpoint) return std::nullopt;
  return impl_->endpoint->port();
}

void Metrics::observe_health(const NodeHealth& health) {
  try {
    impl_->observe(health);
  } catch (const std::exception& e) {
    spdlog::error("metrics: the node's health not shown: {}", e.what());
  }
}

void Metrics::notify(const Notice& n) noexcept {
  try {
    std::lock_guard lock(impl_->mutex);
    impl_->count_notice(n);
  } catch (...) {
    // A counter that cannot be bumped (no memory) is not worth the engine thread.
  }
}

void Metrics::observe_slurm_call(std::string_view call, std::chrono::duration<double> took, bool answered) {
  std::lock_guard lock(impl_->mutex);
  const auto name = label_value(call);
  impl_->slurm_call_duration.at({{"call", name}}, kSlurmBuckets).Observe(took.count());
  impl_->slurm_calls.at({{"call", name}, {"answered", answered ? "true" : "false"}}).Increment();
}

void Metrics::observe_protocol_error(std::string_view code) {
  std::lock_guard lock(impl_->mutex);
  impl_->protocol_errors.at({{"code", label_value(code)}}).Increment();
}

void Metrics::observe_webhook(std::string_view outcome) {
  std::lock_guard lock(impl_->mutex);
  impl_->webhook_deliveries.at({{"outcome", label_value(outcome)}}).Increment();
}

std::string Metrics::text() const { return prometheus::TextSerializer().Serialize(impl_->registry->Collect()); }

}  // namespace ar::healthd
