// The sysfs and /proc readers of the node, EFA and Neuron collectors (healthd/collectors: sysfs_read,
// node_info, efa_sysfs, neuron_sysfs). They only take paths, so each input builds a small host tree:
// its first byte picks which file gets the rest of the input, every other file holds a sane value.
// Property: never a crash or undefined behaviour, whatever a file under the host root holds.
#include "collectors/driver_version.hpp"
#include "collectors/efa_sysfs.hpp"
#include "collectors/neuron_sysfs.hpp"
#include "collectors/node_info.hpp"
#include "collectors/sysfs_read.hpp"
#include "fuzz_support.hpp"

namespace {

using ar::fuzz::write_file;
using std::filesystem::path;

void fuzz_node(const path& root, unsigned which, std::string_view text) {
  // 0: the online CPU list; 1: /proc/cpuinfo (no sysfs list); 2: /proc/meminfo; 3: a process name.
  if (which == 0) write_file(root / "sys/devices/system/cpu/online", text);
  if (which == 1) write_file(root / "proc/cpuinfo", text);
  write_file(root / "proc/meminfo", which == 2 ? text : "MemTotal:       2097152 kB\n");
  write_file(root / "proc/1/comm", which == 3 ? text : "systemd\n");
  (void)ar::healthd::count_cpu_list(std::string(text));
  (void)ar::healthd::read_node_info(root, /*with_clock=*/false);
  ar::healthd::ProcessFinder finder;
  (void)finder.find(root, {"slurmd", std::string(text)});
}

void fuzz_efa(const path& root, unsigned which, std::string_view text) {
  // 4: the vendor id; 5: a port state; 6: a port counter; 9: the PCI device id; 10: a device counter;
  // 11: the driver's version.
  const auto dev = root / "sys/class/infiniband/efa0";
  write_file(dev / "device/vendor", which == 4 ? text : "0x1d0f\n");
  write_file(dev / "device/device", which == 9 ? text : "0xefa1\n");
  write_file(dev / "ports/1/state", which == 5 ? text : "4: ACTIVE\n");
  write_file(dev / "ports/1/hw_counters/rx_drops", which == 6 ? text : "0\n");
  write_file(dev / "hw_counters/cmds_err", which == 10 ? text : "0\n");
  write_file(root / "sys/module/efa/version", which == 11 ? text : "2.17.3g\n");
  (void)ar::healthd::port_state_name(std::string(text));
  (void)ar::healthd::read_efa_sysfs(root, {"rx_drops", "tx_bytes", "cmds_err"});
}

void fuzz_neuron(const path& root, unsigned which, std::string_view text) {
  // 7: a device counter file; 8: a per-core counter directory's total; 12: unhealthy_components;
  // 13: healthcheck_heartbeat; 14: the driver's version; 15: the device name.
  const auto dev = root / "sys/devices/virtual/neuron_device/neuron0";
  write_file(dev / "stats/hardware/mem_ecc_uncorrected", which == 7 ? text : "0\n");
  write_file(dev / "neuron_core0/stats/hardware/sram_ecc_uncorrected/total", which == 8 ? text : "0\n");
  write_file(dev / "stats/hardware/health_status/unhealthy_components", which == 12 ? text : "\n");
  write_file(dev / "stats/hardware/health_status/healthcheck_heartbeat", which == 13 ? text : "1\n");
  write_file(root / "sys/module/neuron/version", which == 14 ? text : "2.30.2.0\n");
  write_file(dev / "info/architecture/device_name", which == 15 ? text : "Trainium2\n");
  write_file(root / "dev/neuron0", "");
  (void)ar::healthd::read_neuron_sysfs(root);
  (void)ar::healthd::split_components(std::string(text));
  (void)ar::healthd::parse_driver_version(std::string(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ar::fuzz::quiet_logs();
  if (size == 0) return 0;
  const unsigned which = data[0] % 16;
  const auto text = ar::fuzz::as_text(data + 1, size - 1);
  const auto root = ar::fuzz::fresh_dir("host");
  if (which <= 3) fuzz_node(root, which, text);
  else if ((which >= 4 && which <= 6) || (which >= 9 && which <= 11)) fuzz_efa(root, which, text);
  else fuzz_neuron(root, which, text);
  return 0;
}
