// Prometheus metrics of one node's healthd (prometheus-cpp): what a dashboard across hundreds of
// nodes shows and what alerts fire on. Served on [metrics] listen (off by default) and/or written as
// a node_exporter textfile. Names follow Prometheus conventions (healthd_*, _total, _seconds); per-GPU
// series carry dcgm-exporter's labels (gpu, UUID, pci_bus_id, modelName, Hostname) so dashboards
// join them with DCGM's. The reference is docs/metrics.md.
//
// Threads: observe_health() and notify() are called on the engine thread, observe_slurm_call() on
// whichever thread calls Slurm, observe_protocol_error() on the event loop; the endpoint's own
// thread (telemetry/metrics_endpoint.hpp) and the textfile writer only read. None of them blocks on I/O.
#pragma once

#include <chrono>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/telemetry_config.hpp"
#include "vocabulary/node_health.hpp"
#include "vocabulary/notice.hpp"

namespace ar::healthd {

class Metrics final : public NoticeSink {
 public:
  // `node`: the Slurm node name (the Hostname label); `version`: healthd's (build info).
  Metrics(std::string node, std::string version);
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Opens the endpoint and starts the textfile writer that `config` asks for (neither: nothing
  // runs, the metrics are still kept for text()). An address that cannot be bound is an error.
  std::expected<void, std::string> start(const MetricsConfig& config);
  // Stops the endpoint and the writer (the textfile is written a last time).
  void stop();
  // The port the endpoint listens on (the one the system chose, for port 0); none without one.
  std::optional<int> listening_port() const;

  // The node's health as the engine publishes it, after each sweep and when the standing changes.
  void observe_health(const NodeHealth& health);
  // A notice (vocabulary/notice.hpp): counted by kind and code.
  void notify(const Notice& n) noexcept override;
  // One call to slurmctld: which call ("load_job", "update_node", ...), how long it took, and
  // whether Slurm answered (an error answer counts as answered; a timeout or no connection not).
  void observe_slurm_call(std::string_view call, std::chrono::duration<double> took, bool answered);
  // A message refused on the socket, by its error code (proto::err).
  void observe_protocol_error(std::string_view code);
  // A webhook delivery outcome ("sent", "failed", "dropped", "retry").
  void observe_webhook(std::string_view outcome);

  // Everything in the text exposition format (what /metrics serves).
  std::string text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ar::healthd
