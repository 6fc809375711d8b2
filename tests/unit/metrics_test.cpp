// healthd's Prometheus metrics (telemetry/metrics.hpp) fed as the daemon feeds them: the node's
// typed health (with real GPU check results from the fake NVML library), notices, Slurm calls. Values
// and labels, series that go when their thing goes, the cardinality cap, `promtool check metrics` on
// the text, the endpoint (and its stand against a flood of slow connections) and the textfile; and
// the packaged alert rules and dashboard against the metrics that exist.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "actions/slurm_api_client.hpp"
#include "checks/gpu/gpu_check.hpp"
#include "checks/gpu/gpu_inventory.hpp"
#include "checks/gpu/xid_check.hpp"
#include "state/atomic_file.hpp"
#include "telemetry/metrics.hpp"
#include "telemetry/metrics_endpoint.hpp"
#include "temp_dir.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// One sample of the text exposition: name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the text format as prometheus-cpp writes it (one sample a line, labels quoted with \\, \"
// and \n escaped).
std::vector<Sample> parse(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        auto eq = line.find('=', i);
        std::string key = line.substr(i, eq - i), value;
        i = eq + 2;  // past ="
        while (line[i] != '"') {
          if (line[i] == '\\') ++i;
          value += line[i++];
        }
        s.labels[key] = value;
        ++i;  // past "
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    s.value = std::stod(line.substr(i + 1));
    out.push_back(std::move(s));
  }
  return out;
}

// The samples of `name` whose labels include `labels`.
std::vector<Sample> samples(const Metrics& m, const std::string& name, const std::map<std::string, std::string>& labels = {}) {
  std::vector<Sample> out;
  for (auto& s : parse(m.text())) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) match = match && s.labels.contains(k) && s.labels.at(k) == v;
    if (match) out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> value(const Metrics& m, const std::string& name, const std::map<std::string, std::string>& labels = {}) {
  auto found = samples(m, name, labels);
  if (found.size() != 1) return std::nullopt;
  return found.front().value;
}

// A check's result as the engine holds it; `devices`: what it read of each device.
CheckResult result(const std::string& check, Status status, DeviceReadings devices = {},
                   std::chrono::milliseconds duration = 12ms) {
  CheckResult r;
  r.check = check;
  r.status = status;
  r.code = status == Status::ok ? "" : "X-" + check;
  r.message = "m";
  r.duration = duration;
  r.at = std::chrono::system_clock::now();
  r.devices = std::move(devices);
  return r;
}

// The node's health as the engine publishes it: the results, the GPUs the GPU kind lists from them,
// then each result's own devices.
NodeHealth status_with(std::vector<CheckResult> checks, bool faulty = false, const std::string& code = "",
                       std::uint64_t seq = 1) {
  NodeHealth h;
  h.standing = {faulty, code, false};
  h.pending_actions = faulty ? 2 : 0;
  h.sweep_seq = seq;
  h.sweep_ms = 40.0;
  h.devices = gpu_inventory(checks).readings;
  for (const auto& r : checks) h.devices.add(r.devices);
  h.results = std::move(checks);
  return h;
}

// The fake NVML's scenario for this test (tests/fakes/README.md).
struct MetricsScenario {
  ar::test::TempDir dir;
  explicit MetricsScenario(const std::string& text) {
    std::ofstream(dir / "nvml.json.tmp") << text;
    std::filesystem::rename(dir / "nvml.json.tmp", dir / "nvml.json");
    ::setenv("FAKE_NVML_SCENARIO", (dir / "nvml.json").c_str(), 1);
  }
  ~MetricsScenario() {
    ::unsetenv("FAKE_NVML_SCENARIO");
    std::filesystem::remove(dir / "nvml.json");
  }
};

// The GPU check's results for the fake's `scenario`.
std::vector<CheckResult> gpu_checks(const std::string& scenario) {
  MetricsScenario s(scenario);
  GpuCheck check(FAKE_NVML_PATH, GpuThresholds{}, 5s, nullptr);
  return check.run();
}

struct Run {
  int rc = -1;
  std::string output;
};
Run run(const std::string& command) {
  Run r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

constexpr const char* kPromtool = "/usr/bin/promtool";

// What `promtool check metrics` says about `text`, less the one thing it is allowed to say: the
// per-GPU families carry dcgm-exporter's label names (UUID, modelName, Hostname), which its lint
// calls camelCase. Everything else it reports (a parse error, a counter without _total, a unit,
// a missing HELP) is a failure. Empty: all is well.
std::string promtool_complaints(const std::string& text) {
  if (::access(kPromtool, X_OK) != 0) return std::string(kPromtool) + " is missing (Debian: apt-get install prometheus)";
  ar::test::TempDir dir;
  std::ofstream(dir / "metrics.prom") << text;
  auto r = run(std::string(kPromtool) + " check metrics < " + (dir / "metrics.prom").string());
  std::istringstream in(r.output);
  std::string line, rest;
  static const std::regex dcgm_labels(
      R"(^healthd_gpu_(health|xid_last) label names should be written in 'snake_case' not 'camelCase'$)");
  while (std::getline(in, line))
    if (!line.empty() && !std::regex_match(line, dcgm_labels)) rest += line + "\n";
  // 0: clean; 3: lint problems only (all of which were the allowed one when `rest` is empty).
  if (r.rc != 0 && r.rc != 3) rest += "promtool exit status " + std::to_string(r.rc) + "\n";
  return rest;
}

// Everything a busy node's healthd has to tell: every family with at least one series.
void populate(Metrics& m) {
  auto checks = gpu_checks(R"({"devices": [{}, {"remap": {"corrected": 0, "uncorrected": 1, "pending": true, "failure": false}}]})");
  XidCheck xids(XidPolicy::defaults(), 600s);
  xids.record({79, "0000:28:00", "kernel_log", "NVRM: Xid (PCI:0000:28:00): 79, GPU has fallen off the bus.",
               XidCheck::Clock::now()});
  checks.push_back(xids.judge(XidCheck::Clock::now()));
  checks.push_back(result("efa.ports", Status::fault, {.efa_ports = {{"rdmap16s27", "1", true}, {"rdmap32s27", "1", false}}}));
  checks.push_back(result("neuron.health", Status::ok, {.neuron_devices = {{"neuron0", true}}}));
  checks.push_back(result("kernel_log", Status::ok));
  m.observe_health(status_with(checks, true, "GPU-XID-79"));
  auto at = std::chrono::system_clock::now();
  for (auto kind : all_notice_kinds())
    m.notify({kind, at, "n1", 42, 1000, 1, "GPU-XID-79", "XID 79 on GPU 1", kind == NoticeKind::drain ? "reboot" : "requeue"});
  m.observe_slurm_call("load_job", 3ms, true);
  m.observe_slurm_call("update_node", 5s, false);
  m.observe_protocol_error("bad_request");
  m.observe_webhook("sent");
  // A client making up error codes: past the cap, so the overflow counter has a series too.
  for (int i = 0; i <= 256; ++i) m.observe_protocol_error("made_up_" + std::to_string(i));
}

// The metric families `text` holds (histograms by their family name).
std::set<std::string> families(const std::string& text) {
  std::set<std::string> out;
  static const std::regex type_line(R"(^# TYPE (\S+) \S+$)");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, type_line)) out.insert(m[1]);
  return out;
}

// Every healthd_* name in `text` (PromQL, a dashboard), a histogram's _bucket/_sum/_count taken to
// its family.
std::set<std::string> names_in(const std::string& text) {
  std::set<std::string> out;
  static const std::regex name(R"(\bhealthd_[a-z_]+[a-z])");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
    std::string n = it->str();
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (n.ends_with(suffix) && !n.ends_with("_total")) n.resize(n.size() - std::string(suffix).size());
    out.insert(n);
  }
  return out;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// GET /metrics from 127.0.0.1:port, the body.
std::string scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return {};
  }
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  auto body = reply.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : reply.substr(body + 4);
}

bool eventually(const std::function<bool()>& done, std::chrono::seconds within = 20s) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

// A TCP connection to 127.0.0.1:port, closed with the object; -1 when the connect failed.
struct Client {
  int fd = -1;
  explicit Client(int port, int receive_buffer = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~Client() {
    if (fd >= 0) ::close(fd);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&& o) noexcept : fd(std::exchange(o.fd, -1)) {}

  bool send(std::string_view bytes) const {
    return fd >= 0 && ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Everything the server sends until it closes (EOF or reset), or nullopt if it has not closed
  // within `within`.
  std::optional<std::string> read_to_close(std::chrono::milliseconds within) const {
    std::string got;
    const auto until = std::chrono::steady_clock::now() + within;
    char buf[65536];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return got;
      got.append(buf, static_cast<std::size_t>(n));
    }
  }
  // True while the server has neither closed nor sent anything (nothing to read, no EOF).
  bool still_open() const {
    char c;
    return ::recv(fd, &c, 1, MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
};

struct HttpReply {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
};

// Sends `request` on a new connection and reads the reply to the close, all within `within`;
// nullopt when the connect failed, the reply did not come whole in time or is no HTTP.
std::optional<HttpReply> http(int port, std::string_view request, std::chrono::milliseconds within = 3000ms) {
  Client c(port);
  if (!c.send(request)) return std::nullopt;
  auto raw = c.read_to_close(within);
  if (!raw || !raw->starts_with("HTTP/1.1 ") || raw->size() < 12) return std::nullopt;
  const auto end = raw->find("\r\n\r\n");
  if (end == std::string::npos) return std::nullopt;
  return HttpReply{std::stoi(raw->substr(9, 3)), raw->substr(0, end + 2), raw->substr(end + 4)};
}

constexpr std::string_view kScrape = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nUser-Agent: Prometheus/2.45.0\r\n"
                                     "Accept-Encoding: gzip\r\n\r\n";

sockaddr_in loopback_any_port() {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

}  // namespace

TEST(Metrics, BuildInfoAndTheNodeVerdict) {
  Metrics m("n1", "1.4.2");
  EXPECT_EQ(value(m, "healthd_build_info", {{"version", "1.4.2"}}), 1);
  m.observe_health(status_with({result("kernel_log", Status::fault)}, true, "KMSG-MCE"));
  EXPECT_EQ(value(m, "healthd_node_faulty"), 1);
  EXPECT_EQ(value(m, "healthd_node_fault_info", {{"code", "KMSG-MCE"}}), 1);
  EXPECT_EQ(value(m, "healthd_actions_pending"), 2);
  // Healthy again: the fault's info series goes, it does not stay at its last value.
  m.observe_health(status_with({result("kernel_log", Status::ok)}, false, "", 2));
  EXPECT_EQ(value(m, "healthd_node_faulty"), 0);
  EXPECT_TRUE(samples(m, "healthd_node_fault_info").empty());
  EXPECT_EQ(value(m, "healthd_actions_pending"), 0);
}

TEST(Metrics, EachCheckHasItsStatusDurationAndLastRunAndGoesWhenTheCheckGoes) {
  Metrics m("n1", "1");
  const std::int64_t at = 1'780'000'123'456;  // ms
  auto r = result("node.memory", Status::warn, {}, 250ms);
  r.at = std::chrono::system_clock::time_point(std::chrono::milliseconds(at));
  m.observe_health(status_with({r, result("kernel_log", Status::ok)}));
  EXPECT_EQ(value(m, "healthd_check_status", {{"check", "node.memory"}, {"status", "warn"}}), 1);
  for (const char* other : {"ok", "fault", "error"})
    EXPECT_EQ(value(m, "healthd_check_status", {{"check", "node.memory"}, {"status", other}}), 0) << other;
  EXPECT_EQ(value(m, "healthd_check_duration_seconds", {{"check", "node.memory"}}), 0.25);
  EXPECT_DOUBLE_EQ(*value(m, "healthd_check_last_run_timestamp_seconds", {{"check", "node.memory"}}), at / 1000.0);
  // A check of several results (one per mount) shows its worst.
  m.observe_health(status_with({result("storage", Status::ok), result("storage", Status::fault), result("kernel_log", Status::ok)}, false, "", 2));
  EXPECT_EQ(value(m, "healthd_check_status", {{"check", "storage"}, {"status", "fault"}}), 1);
  // node.memory is gone after a reload: none of its series stays.
  EXPECT_TRUE(samples(m, "healthd_check_status", {{"check", "node.memory"}}).empty());
  EXPECT_TRUE(samples(m, "healthd_check_duration_seconds", {{"check", "node.memory"}}).empty());
  EXPECT_TRUE(samples(m, "healthd_check_last_run_timestamp_seconds", {{"check", "node.memory"}}).empty());
}

TEST(Metrics, EachSweepIsCountedOnceWhateverHowOftenTheStatusIsPublished) {
  Metrics m("n1", "1");
  m.observe_health(status_with({}, false, "", 7));
  m.observe_health(status_with({}, false, "", 7));
  EXPECT_EQ(value(m, "healthd_sweep_duration_seconds_count"), 1);
  EXPECT_DOUBLE_EQ(*value(m, "healthd_sweep_duration_seconds_sum"), 0.04);
  m.observe_health(status_with({}, false, "", 8));
  EXPECT_EQ(value(m, "healthd_sweep_duration_seconds_count"), 2);
  EXPECT_GT(*value(m, "healthd_last_sweep_timestamp_seconds"), 1.7e9);
}

TEST(Metrics, EachGpuHasItsHealthWithDcgmExportersLabels) {
  Metrics m("n7", "1");
  m.observe_health(status_with(gpu_checks(R"({"devices": [{}, {"remap": {"corrected": 0, "uncorrected": 0, "pending": false, "failure": true}}]})")));
  auto gpus = samples(m, "healthd_gpu_health");
  ASSERT_EQ(gpus.size(), 2u) << m.text();
  const std::map<std::string, std::string> want = {{"gpu", "1"},
                                                   {"UUID", "GPU-fa4e0000-0000-4000-8000-000000000001"},
                                                   {"pci_bus_id", "00000000:28:00.0"},
                                                   {"modelName", "NVIDIA H100 80GB HBM3"},
                                                   {"Hostname", "n7"}};
  EXPECT_EQ(value(m, "healthd_gpu_health", want), 2);  // a failed row remap: fault
  EXPECT_EQ(samples(m, "healthd_gpu_health", want).front().labels, want);
  EXPECT_EQ(value(m, "healthd_gpu_health", {{"gpu", "0"}}), 0);
  EXPECT_EQ(value(m, "healthd_gpu_xid_last", {{"gpu", "0"}}), 0);
  // One GPU fell off the bus for good: its series go with it.
  m.observe_health(status_with(gpu_checks(R"({"devices": [{}]})"), false, "", 2));
  EXPECT_EQ(samples(m, "healthd_gpu_health").size(), 1u);
  EXPECT_TRUE(samples(m, "healthd_gpu_health", {{"gpu", "1"}}).empty());
  EXPECT_TRUE(samples(m, "healthd_gpu_xid_last", {{"gpu", "1"}}).empty());
}

TEST(Metrics, GpusStayAsUnknownWhileNvmlItselfFailsAndGoWhenTheCheckGoes) {
  Metrics m("n1", "1");
  m.observe_health(status_with(gpu_checks(R"({"devices": [{}, {}]})")));
  ASSERT_EQ(samples(m, "healthd_gpu_health").size(), 2u);
  // NVML hangs: the GPU check reports only gpu.nvml, with no GPU in it.
  auto hang = result("gpu.nvml", Status::fault);
  m.observe_health(status_with({hang}, true, "GPU-NVML-HANG", 2));
  auto gpus = samples(m, "healthd_gpu_health");
  ASSERT_EQ(gpus.size(), 2u);
  for (const auto& g : gpus) EXPECT_EQ(g.value, 3);
  // The GPU check is gone (a reload without it): so are its GPUs.
  m.observe_health(status_with({result("kernel_log", Status::ok)}, false, "", 3));
  EXPECT_TRUE(samples(m, "healthd_gpu_health").empty());
}

TEST(Metrics, EveryXidEventIsCountedOnceAndTheLastOneIsShownPerGpu) {
  Metrics m("n1", "1");
  const auto checks = gpu_checks(R"({"devices": [{}, {}]})");
  XidCheck xids(XidPolicy::defaults(), 600s);
  // One remembered from before this healthd started (its state file): counted by the one before.
  const auto before = XidCheck::Clock::now() - 60s;
  xids.record({13, "0000:18:00", "kernel_log", "NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception", before});
  auto with_xids = [&](std::uint64_t seq) {
    auto c = checks;
    c.push_back(xids.judge(XidCheck::Clock::now()));
    return status_with(c, false, "", seq);
  };
  m.observe_health(with_xids(1));
  EXPECT_TRUE(samples(m, "healthd_xid_events_total", {{"xid", "13"}}).empty() ||
              value(m, "healthd_xid_events_total", {{"xid", "13"}}) == 0);
  xids.record({79, "0000:28:00", "nvml", "NVML event: XID 79", XidCheck::Clock::now()});
  m.observe_health(with_xids(2));
  m.observe_health(with_xids(3));  // the same events again: nothing new
  EXPECT_EQ(value(m, "healthd_xid_events_total", {{"xid", "79"}}), 1);
  EXPECT_EQ(value(m, "healthd_gpu_xid_last", {{"gpu", "1"}}), 79);
  EXPECT_EQ(value(m, "healthd_gpu_health", {{"gpu", "1"}}), 2);
  // The kernel log's line for the same event (within seconds) is not a second event; a later one is.
  xids.record({79, "0000:28:00", "kernel_log", "NVRM: Xid (PCI:0000:28:00): 79", XidCheck::Clock::now()});
  m.observe_health(with_xids(4));
  EXPECT_EQ(value(m, "healthd_xid_events_total", {{"xid", "79"}}), 1);
  xids.record({13, "0000:18:00", "kernel_log", "NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception", XidCheck::Clock::now()});
  xids.record({13, "0000:18:00", "kernel_log", "NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception", XidCheck::Clock::now()});
  m.observe_health(with_xids(5));
  EXPECT_EQ(value(m, "healthd_xid_events_total", {{"xid", "13"}}), 2);
  EXPECT_EQ(value(m, "healthd_gpu_xid_last", {{"gpu", "0"}}), 13);
}

TEST(Metrics, EfaPortsAndNeuronDevicesFromTheirChecksReadings) {
  Metrics m("n1", "1");
  // A port whose state could not be read is no reading (the check says error): no series.
  auto efa = result("efa.ports", Status::fault, {.efa_ports = {{"rdmap16s27", "1", true}, {"rdmap32s27", "1", false}}});
  // A device is healthy only while every check's reading of it says so.
  auto health = result("neuron.health", Status::fault, {.neuron_devices = {{"neuron0", true}, {"neuron1", false}, {"neuron2", true}}});
  auto errors = result("neuron.errors", Status::fault, {.neuron_devices = {{"neuron2", false}, {"neuron0", true}}});
  m.observe_health(status_with({efa, health, errors}, true, "EFA-PORT-DOWN"));
  EXPECT_EQ(value(m, "healthd_efa_device_up", {{"device", "rdmap16s27"}, {"port", "1"}}), 1);
  EXPECT_EQ(value(m, "healthd_efa_device_up", {{"device", "rdmap32s27"}, {"port", "1"}}), 0);
  EXPECT_EQ(samples(m, "healthd_efa_device_up").size(), 2u);
  EXPECT_EQ(value(m, "healthd_neuron_device_healthy", {{"device", "neuron0"}}), 1);
  EXPECT_EQ(value(m, "healthd_neuron_device_healthy", {{"device", "neuron1"}}), 0);
  EXPECT_EQ(value(m, "healthd_neuron_device_healthy", {{"device", "neuron2"}}), 0);
  // An EFA device gone (a reload with another profile): its series too.
  efa.devices.efa_ports.pop_back();
  m.observe_health(status_with({efa}, false, "", 2));
  EXPECT_TRUE(samples(m, "healthd_efa_device_up", {{"device", "rdmap32s27"}}).empty());
  EXPECT_TRUE(samples(m, "healthd_neuron_device_healthy").empty());
}

TEST(Metrics, NoticesAreCountedByKindAndCode) {
  Metrics m("n1", "1");
  const auto at = std::chrono::system_clock::now();
  m.notify({NoticeKind::incident, at, "n1", 0, {}, 0, "GPU-XID-79", "XID 79", ""});
  m.notify({NoticeKind::drain, at, "n1", 0, {}, 0, "GPU-XID-79", "XID 79", "reboot"});
  m.notify({NoticeKind::drain, at, "n1", 0, {}, 0, "KMSG-MCE", "MCE", "drain"});
  m.notify({NoticeKind::requeue, at, "n1", 42, 1000, 0, "GPU-XID-79", "XID 79", "requeue"});
  m.notify({NoticeKind::requeue, at, "n1", 43, 1000, 0, "GPU-XID-79", "XID 79", "requeue"});
  m.notify({NoticeKind::resumed, at, "n1", 42, 1000, 1, "GPU-XID-79", "", "resume"});
  m.notify({NoticeKind::resume_cap, at, "n1", 44, 1000, 3, "GPU-XID-79", "", ""});
  m.notify({NoticeKind::action_failing, at, "n1", 0, {}, 0, "GPU-XID-79", "", "drain"});
  m.notify({NoticeKind::node_returned, at, "n1", 0, {}, 0, "GPU-XID-79", "", "resume"});
  m.notify({NoticeKind::admin, at, "n1", 0, {}, 0, "", "", "clear"});
  m.notify({NoticeKind::signal, at, "n1", 42, 1000, 0, "EC2-MAINTENANCE", "", "signal"});
  EXPECT_EQ(value(m, "healthd_incidents_total", {{"code", "GPU-XID-79"}}), 1);
  EXPECT_EQ(value(m, "healthd_drains_total", {{"code", "GPU-XID-79"}, {"action", "reboot"}}), 1);
  EXPECT_EQ(value(m, "healthd_drains_total", {{"code", "KMSG-MCE"}, {"action", "drain"}}), 1);
  EXPECT_EQ(value(m, "healthd_requeues_total", {{"code", "GPU-XID-79"}}), 2);
  EXPECT_EQ(value(m, "healthd_resumes_total"), 1);
  EXPECT_EQ(value(m, "healthd_resume_caps_reached_total"), 1);
  EXPECT_EQ(value(m, "healthd_action_failures_total", {{"kind", "drain"}}), 1);
  EXPECT_EQ(value(m, "healthd_node_returns_total"), 1);
  EXPECT_EQ(value(m, "healthd_admin_actions_total", {{"action", "clear"}}), 1);
  EXPECT_EQ(value(m, "healthd_checkpoint_signals_total"), 1);
}

TEST(Metrics, SlurmCallsProtocolErrorsAndWebhookDeliveries) {
  Metrics m("n1", "1");
  m.observe_slurm_call("load_job", 2ms, true);
  m.observe_slurm_call("load_job", 40ms, true);
  m.observe_slurm_call("update_node", 5s, false);
  EXPECT_EQ(value(m, "healthd_slurm_call_duration_seconds_count", {{"call", "load_job"}}), 2);
  EXPECT_EQ(value(m, "healthd_slurm_call_duration_seconds_bucket", {{"call", "load_job"}, {"le", "0.005"}}), 1);
  EXPECT_EQ(value(m, "healthd_slurm_call_duration_seconds_bucket", {{"call", "load_job"}, {"le", "0.05"}}), 2);
  EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "load_job"}, {"answered", "true"}}), 2);
  EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "update_node"}, {"answered", "false"}}), 1);
  m.observe_protocol_error("bad_request");
  m.observe_protocol_error("bad_request");
  EXPECT_EQ(value(m, "healthd_protocol_errors_total", {{"code", "bad_request"}}), 2);
  m.observe_webhook("retry");
  EXPECT_EQ(value(m, "healthd_webhook_deliveries_total", {{"outcome", "retry"}}), 1);
}

TEST(Metrics, SlurmApiClientTellsItsObserverOfEachCall) {
  // No slurm.conf: every libslurm call is "not answering" at once (slurm_records_test does the same).
  const char* old = std::getenv("SLURM_CONF");
  const std::string saved = old ? old : "";
  ::setenv("SLURM_CONF", "/nonexistent/slurm.conf", 1);
  {
    Metrics m("n1", "1");
    // scontrol (reboot only) is /bin/true here: it would run and exit 0, an answer.
    SlurmApiClient client("/bin/true", 2s);
    client.set_call_observer([&m](std::string_view call, std::chrono::duration<double> took, bool answered) {
      m.observe_slurm_call(call, took, answered);
    });
    EXPECT_FALSE(client.node("n1"));
    EXPECT_FALSE(client.job(7));
    EXPECT_FALSE(client.drain("n1", "healthd: X: y"));
    EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "load_node"}, {"answered", "false"}}), 1);
    EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "load_job"}, {"answered", "false"}}), 1);
    EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "update_node"}, {"answered", "false"}}), 1);
    // A reboot asks slurmctld for its RebootProgram, then drains the node (it must come back drained)
    // before scontrol runs: with no slurmctld both go unanswered, and scontrol is never run.
    EXPECT_FALSE(client.reboot("n1", "healthd: X: y"));
    EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "load_ctl_conf"}, {"answered", "false"}}), 1);
    EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "update_node"}, {"answered", "false"}}), 2);
    EXPECT_EQ(value(m, "healthd_slurm_calls_total", {{"call", "reboot"}, {"answered", "true"}}), std::nullopt);
  }
  if (old) ::setenv("SLURM_CONF", saved.c_str(), 1);
  else ::unsetenv("SLURM_CONF");
}

TEST(Metrics, LabelValuesFromOutsideAreCappedPerFamilyAndTheRestCountedAsOther) {
  Metrics m("n1", "1");
  const auto at = std::chrono::system_clock::now();
  // A hostile admin script (or kernel log) that makes up a new code each time.
  for (int i = 0; i < 300; ++i) m.notify({NoticeKind::incident, at, "n1", 0, {}, 0, "CODE-" + std::to_string(i), "", ""});
  auto series = samples(m, "healthd_incidents_total");
  EXPECT_EQ(series.size(), 257u);  // 256 codes, and "other"
  EXPECT_EQ(value(m, "healthd_incidents_total", {{"code", "other"}}), 44);
  EXPECT_EQ(value(m, "healthd_incidents_total", {{"code", "CODE-0"}}), 1);
  EXPECT_EQ(value(m, "healthd_metrics_label_overflow_total", {{"family", "healthd_incidents_total"}}), 44);
  // A known code still counts as itself past the cap.
  m.notify({NoticeKind::incident, at, "n1", 0, {}, 0, "CODE-7", "", ""});
  EXPECT_EQ(value(m, "healthd_incidents_total", {{"code", "CODE-7"}}), 2);
  // A gauge family from a status: at most 256 series, the rest left out (and counted).
  DeviceReadings ports;
  for (int i = 0; i < 300; ++i) ports.efa_ports.push_back({"efa" + std::to_string(i), "1", true});
  m.observe_health(status_with({result("efa.ports", Status::ok, ports)}));
  EXPECT_EQ(samples(m, "healthd_efa_device_up").size(), 256u);
  EXPECT_EQ(value(m, "healthd_metrics_label_overflow_total", {{"family", "healthd_efa_device_up"}}), 44);
  // The same sets left out again at the next status are not counted again.
  m.observe_health(status_with({result("efa.ports", Status::ok, ports)}));
  EXPECT_EQ(value(m, "healthd_metrics_label_overflow_total", {{"family", "healthd_efa_device_up"}}), 44);
}

// Before the first sweep the engine publishes the standing alone: no check, no device has a series.
TEST(Metrics, BeforeTheFirstSweepOnlyTheNodesStandingIsShown) {
  Metrics m("n1", "1");
  NodeHealth h;
  h.standing = {true, "KMSG-MCE", true};
  h.pending_actions = 1;
  h.results = {result("kernel_log", Status::fault)};  // not a sweep's (sweep_seq 0): not shown
  m.observe_health(h);
  EXPECT_EQ(value(m, "healthd_node_faulty"), 1);
  EXPECT_EQ(value(m, "healthd_actions_pending"), 1);
  EXPECT_TRUE(samples(m, "healthd_check_status").empty());
  EXPECT_EQ(value(m, "healthd_sweep_duration_seconds_count"), 0);
  EXPECT_EQ(promtool_complaints(m.text()), "");
}

TEST(Metrics, PromtoolChecksTheTextEvenWithHostileLabelValues) {
  Metrics m("n1", "1.0.0");
  populate(m);
  const auto at = std::chrono::system_clock::now();
  m.notify({NoticeKind::incident, at, "n1", 0, {}, 0, "BAD\"CODE\\\n\xff\x01", "", ""});
  m.observe_health(status_with({result("script:odd \"name\"\n\xc3", Status::warn)}, false, "", 9));
  const auto text = m.text();
  EXPECT_EQ(promtool_complaints(text), "") << text;
  // And promtool does complain about what it should: this is no test that always passes.
  EXPECT_NE(promtool_complaints(text + "# TYPE healthd_bad counter\nhealthd_bad 1\n"), "");
}

TEST(Metrics, TheEndpointServesTheTextAndABoundPortIsAnErrorNamingTheAddress) {
  Metrics m("n1", "2.0");
  ASSERT_TRUE(m.start({.listen = "127.0.0.1:0"}));
  ASSERT_TRUE(m.listening_port());
  const int port = *m.listening_port();
  m.observe_health(status_with({result("kernel_log", Status::fault)}, true, "KMSG-MCE"));
  const auto body = scrape(port);
  EXPECT_NE(body.find("healthd_build_info{version=\"2.0\"} 1"), std::string::npos) << body;
  EXPECT_NE(body.find("healthd_node_fault_info{code=\"KMSG-MCE\"} 1"), std::string::npos) << body;
  Metrics second("n1", "2.0");
  const std::string taken = "127.0.0.1:" + std::to_string(port);
  auto r = second.start({.listen = taken});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find(taken), std::string::npos) << r.error();
  m.stop();
  EXPECT_FALSE(m.listening_port());
  EXPECT_EQ(scrape(port), "");
}

TEST(Metrics, TheEndpointTakesAnIpv4AddressOrLocalhostAndNothingItWouldMisread) {
  Metrics m("n1", "1");
  ASSERT_TRUE(m.start({.listen = "localhost:0"}));
  EXPECT_NE(scrape(*m.listening_port()).find("healthd_build_info"), std::string::npos);  // on 127.0.0.1
  m.stop();
  // Nothing that inet_pton or a resolver would read as some other address; no IPv6.
  for (const char* bad : {"999.1.1.1:9464", "[::1]:9464", "metrics.example:9464", "127.0.0.1:9464s", "127.0.0.1"}) {
    auto r = m.start({.listen = bad});
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find(bad), std::string::npos) << r.error();
    EXPECT_FALSE(m.listening_port());
  }
  EXPECT_NE(m.start({.listen = "[::1]:9464"}).error().find("no IPv6"), std::string::npos);
}

// Issue 31: 40 slow connections of an unprivileged user held both workers of the civetweb server
// that was here (10 s each, one after another) and two of three scrapes timed out. Now 200
// connections that send their request a byte at a time, or nothing, leave every scrape answered.
TEST(Metrics, TheEndpointAnswersEveryScrapeWhileAFloodOfSlowConnectionsHoldsIt) {
  Metrics m("n1", "1");
  ASSERT_TRUE(m.start({.listen = "127.0.0.1:0"}));
  const int port = *m.listening_port();
  std::vector<Client> flood;
  for (int i = 0; i < 200; ++i) {
    flood.emplace_back(port);
    ASSERT_GE(flood.back().fd, 0) << "connection " << i;
    if (i % 2 == 0) flood.back().send("G");  // the other half sends nothing at all
  }
  const std::string slow = "ET /metrics HTTP/1.1\r\nHost: x\r\n";
  for (std::size_t byte = 0; byte < 3; ++byte) {
    // Between scrapes the flood goes on, one more byte on each connection still open.
    for (std::size_t i = 0; i < flood.size(); i += 2) (void)flood[i].send(slow.substr(byte, 1));
    const auto reply = http(port, kScrape, 3000ms);
    ASSERT_TRUE(reply) << "scrape " << byte << " not answered within 3 s under the flood";
    EXPECT_EQ(reply->status, 200);
    EXPECT_NE(reply->body.find("healthd_build_info{version=\"1\"} 1"), std::string::npos) << reply->body;
  }
}

TEST(Metrics, TheEndpointAnswersGetMetricsOnlyAndEachBadRequestWithItsStatus) {
  Metrics m("n1", "1");
  ASSERT_TRUE(m.start({.listen = "127.0.0.1:0"}));
  const int port = *m.listening_port();

  const auto ok = http(port, kScrape);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_NE(ok->head.find("\r\nConnection: close\r\n"), std::string::npos) << ok->head;
  EXPECT_NE(ok->head.find("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos) << ok->head;
  EXPECT_NE(ok->head.find("\r\nContent-Length: " + std::to_string(ok->body.size()) + "\r\n"), std::string::npos) << ok->head;
  EXPECT_EQ(promtool_complaints(ok->body), "");

  const std::vector<std::pair<std::string, int>> cases = {
      {"GET /metrics HTTP/1.0\r\n\r\n", 200},
      {"GET /metrics?name[]=up HTTP/1.1\nHost: a\n\n", 200},  // bare LFs, a query string
      {"GET / HTTP/1.1\r\n\r\n", 404},
      {"GET /metricsx HTTP/1.1\r\n\r\n", 404},
      {"GET /metrics/../etc/passwd HTTP/1.1\r\n\r\n", 404},
      {"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 405},
      {"HEAD /metrics HTTP/1.1\r\n\r\n", 405},
      {"GET /metrics HTTP/2.0\r\n\r\n", 505},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400},
      {"garbage\r\n\r\n", 400},
      {"\r\n\r\n", 400},
      {"GET /metrics\r\n\r\n", 400},  // HTTP/0.9
      {"GET  /metrics HTTP/1.1\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1 x\r\n\r\n", 400},
      {"GET metrics HTTP/1.1\r\n\r\n", 400},
      {"GET /met\x01rics HTTP/1.1\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nno header here\r\n\r\n", 400},
      {std::string("GET /metrics HTTP/1.1\r\nX-A: a") + '\0' + "b\r\n\r\n", 400},
      {"G\xc3\xa9T /metrics HTTP/1.1\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(10000, 'a') + "\r\n\r\n", 431},
      {"GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(20000, 'a'), 431},  // over the limit, never ended
      {std::string(9000, '\n'), 400},  // an empty head at once
  };
  for (const auto& [request, status] : cases) {
    const auto reply = http(port, request);
    ASSERT_TRUE(reply) << testing::PrintToString(request.substr(0, 80));
    EXPECT_EQ(reply->status, status) << testing::PrintToString(request.substr(0, 80)) << "\n" << reply->head;
    EXPECT_NE(reply->head.find("\r\nConnection: close\r\n"), std::string::npos);
    if (status == 200) {
      EXPECT_NE(reply->body.find("healthd_build_info"), std::string::npos);
    } else {
      EXPECT_EQ(reply->body.find("healthd_"), std::string::npos) << reply->body;
    }
    if (status == 405) {
      EXPECT_NE(reply->head.find("\r\nAllow: GET\r\n"), std::string::npos) << reply->head;
    }
  }
  // Still serving after all that.
  EXPECT_NE(scrape(port).find("healthd_build_info"), std::string::npos);
}

// The deadline for the head counts from the connect: a connection that trickles a byte every
// 50 ms is closed as surely as one that sends nothing.
TEST(MetricsEndpoint, ARequestNotWholeWithinTheHeadDeadlineIsAnswered408AndClosedHoweverItTrickles) {
  auto endpoint = MetricsEndpoint::open(loopback_any_port(), [] { return std::string("x 1\n"); },
                                        {.head_timeout = 300ms});
  ASSERT_TRUE(endpoint) << endpoint.error();
  const int port = (*endpoint)->port();
  Client silent(port), trickle(port);
  const auto started = std::chrono::steady_clock::now();
  const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: " + std::string(200, 'a');
  bool trickle_closed = false;
  for (std::size_t i = 0; i < head.size() && !trickle_closed; ++i) {
    trickle_closed = !trickle.send(head.substr(i, 1)) || !trickle.still_open();
    std::this_thread::sleep_for(50ms);
  }
  // Closed long before the 10 s the whole trickle would take.
  EXPECT_TRUE(trickle_closed);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 8s);
  const auto answer = silent.read_to_close(5000ms);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->starts_with("HTTP/1.1 408 ")) << *answer;
  // A scrape that sends its request at once is not held by the deadline.
  const auto reply = http(port, kScrape);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->body, "x 1\n");
}

// All connections open: the oldest one still sending its request goes, so a scraper always gets in.
TEST(MetricsEndpoint, WhenEveryConnectionIsOpenTheOldestStillSendingItsRequestMakesRoom) {
  auto endpoint = MetricsEndpoint::open(loopback_any_port(), [] { return std::string("x 1\n"); },
                                        {.max_connections = 4, .head_timeout = 60s});
  ASSERT_TRUE(endpoint) << endpoint.error();
  const int port = (*endpoint)->port();
  // Accepted in the order they connect (the listen queue is first in, first out).
  std::vector<Client> held;
  for (int i = 0; i < 4; ++i) {
    held.emplace_back(port);
    ASSERT_TRUE(held.back().send("G"));
  }
  const auto reply = http(port, kScrape);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  // The oldest held one made room; the three others still wait for their deadline.
  const auto first = held[0].read_to_close(3000ms);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, "");
  for (std::size_t i = 1; i < held.size(); ++i) EXPECT_TRUE(held[i].still_open()) << i;
}

// A client that does not take its reply is cut off at the write deadline, and meanwhile scrapes are
// served: the one thread never waits on a client.
TEST(MetricsEndpoint, AClientThatDoesNotTakeItsReplyIsClosedAtTheWriteDeadlineAndHoldsNoScrapeUp) {
  const std::string big(16 << 20, 'x');
  std::atomic<int> served = 0;
  auto endpoint = MetricsEndpoint::open(loopback_any_port(), [&] { return served++ == 0 ? big : std::string("x 1\n"); },
                                        {.write_timeout = 300ms});
  ASSERT_TRUE(endpoint) << endpoint.error();
  const int port = (*endpoint)->port();
  Client stalled(port, 4096);
  ASSERT_TRUE(stalled.send(kScrape));
  ASSERT_TRUE(eventually([&] { return served >= 1; }));  // its 16 MiB are being written
  const auto reply = http(port, kScrape);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->body, "x 1\n");
  // Past the deadline (with room to spare), the stalled client finds its reply cut short.
  std::this_thread::sleep_for(1500ms);
  const auto got = stalled.read_to_close(10000ms);
  ASSERT_TRUE(got) << "the server never closed the stalled connection";
  EXPECT_LT(got->size(), big.size());
}

TEST(MetricsEndpoint, ABindThatFailsSaysWhy) {
  auto first = MetricsEndpoint::open(loopback_any_port(), [] { return std::string(); });
  ASSERT_TRUE(first);
  auto taken = loopback_any_port();
  taken.sin_port = htons(static_cast<std::uint16_t>((*first)->port()));
  auto second = MetricsEndpoint::open(taken, [] { return std::string(); });
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), "bind: Address already in use");
}

TEST(Metrics, TheTextfileIsWrittenReadableReplacedWholeAndALastTimeAtStop) {
  ar::test::TempDir dir;
  const auto file = dir / "healthd.prom";
  Metrics m("n1", "1");
  ASSERT_TRUE(m.start({.textfile = file, .textfile_interval = 1s}));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(file); }));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // node_exporter reads it as a user of its own
  EXPECT_NE(read(file).find("healthd_build_info"), std::string::npos);
  // Rewritten each interval, with what the metrics hold now.
  m.observe_health(status_with({result("kernel_log", Status::fault)}, true, "KMSG-MCE"));
  ASSERT_TRUE(eventually([&] { return read(file).find("healthd_node_faulty 1") != std::string::npos; }));
  m.observe_health(status_with({result("kernel_log", Status::ok)}, false, "", 2));
  m.stop();  // without waiting for the interval
  EXPECT_NE(read(file).find("healthd_node_faulty 0"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "healthd.prom.tmp"));
  EXPECT_EQ(promtool_complaints(read(file)), "");
}

TEST(Metrics, ATextfileThatCannotBeWrittenIsNoErrorOfTheDaemon) {
  ar::test::TempDir dir;
  Metrics m("n1", "1");
  ASSERT_TRUE(m.start({.textfile = dir / "missing" / "healthd.prom", .textfile_interval = 1s}));
  m.observe_health(status_with({result("kernel_log", Status::ok)}));
  EXPECT_NE(m.text().find("healthd_node_faulty 0"), std::string::npos);
  m.stop();
  EXPECT_FALSE(std::filesystem::exists(dir / "missing"));
}

// The packaged alert rules and dashboard name only metrics that exist, and the rules load.
TEST(Metrics, ThePackagedAlertRulesAndDashboardUseOnlyMetricsThatExist) {
  Metrics m("n1", "1");
  populate(m);
  const auto have = families(m.text());
  const std::filesystem::path src = AR_SOURCE_DIR;
  const auto rules = src / "packaging/prometheus/healthd-alerts.yml";
  ASSERT_EQ(::access(kPromtool, X_OK), 0) << kPromtool << " is missing";
  auto checked = run(std::string(kPromtool) + " check rules " + rules.string());
  EXPECT_EQ(checked.rc, 0) << checked.output;
  const auto rules_text = read(rules);
  ASSERT_FALSE(names_in(rules_text).empty());
  for (const auto& n : names_in(rules_text)) EXPECT_TRUE(have.contains(n)) << "alert rules name " << n;
  for (const char* alert : {"HealthdNodeFaulty", "HealthdResumeCapReached", "HealthdActionsFailing", "HealthdDown",
                            "HealthdTextfileStale", "HealthdSlurmSlow"})
    EXPECT_NE(rules_text.find("alert: " + std::string(alert)), std::string::npos) << alert;

  json dashboard;
  ASSERT_NO_THROW(dashboard = json::parse(read(src / "packaging/grafana/healthd-dashboard.json")));
  ASSERT_TRUE(dashboard.contains("panels"));
  std::string exprs;
  std::function<void(const json&)> collect = [&](const json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if ((k == "expr" || k == "query") && v.is_string()) exprs += v.get<std::string>() + "\n";
        else if (k == "query" && v.is_object() && v.contains("query")) exprs += v["query"].get<std::string>() + "\n";
        else collect(v);
      }
    } else if (j.is_array()) {
      for (const auto& v : j) collect(v);
    }
  };
  collect(dashboard);
  ASSERT_FALSE(names_in(exprs).empty());
  for (const auto& n : names_in(exprs)) EXPECT_TRUE(have.contains(n)) << "the dashboard names " << n;
  // Per-GPU health joined with DCGM's by its labels.
  EXPECT_NE(exprs.find("DCGM_FI_DEV_"), std::string::npos);
}

// docs/metrics.md, the reference, names every family healthd exports.
TEST(Metrics, TheReferenceDocumentsEveryFamily) {
  Metrics m("n1", "1");
  populate(m);
  const auto doc = read(std::filesystem::path(AR_SOURCE_DIR) / "docs/metrics.md");
  for (const auto& f : families(m.text())) EXPECT_NE(doc.find("`" + f + "`"), std::string::npos) << f;
}
