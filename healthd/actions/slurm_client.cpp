#include "slurm_client.hpp"

#include <sstream>

#include "process.hpp"

namespace ar::healthd {
namespace {

// Keys whose value may contain spaces in `scontrol show -o` output; their value runs until the next
// " Key=" of a known key, or the end of the line.
bool is_key_start(const std::string& line, std::size_t pos) {
  // A key is [A-Za-z][A-Za-z0-9_:/]* followed by '='.
  std::size_t i = pos;
  if (i >= line.size() || !std::isalpha(static_cast<unsigned char>(line[i]))) return false;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':' ||
                             line[i] == '/'))
    ++i;
  return i < line.size() && line[i] == '=';
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::uint32_t to_u32(const std::string& s) {
  try {
    return static_cast<std::uint32_t>(std::stoul(s));
  } catch (...) {
    return 0;
  }
}

NodeInfo node_from(const std::map<std::string, std::string>& r) {
  NodeInfo n;
  n.name = r.count("NodeName") ? r.at("NodeName") : "";
  n.state = r.count("State") ? r.at("State") : "";
  n.reason = r.count("Reason") ? r.at("Reason") : "";
  if (n.reason == "(null)") n.reason.clear();
  // Reason is printed as "text [user@time]": keep the text only.
  if (auto at = n.reason.rfind(" ["); at != std::string::npos && n.reason.back() == ']') n.reason.resize(at);
  if (r.count("Partitions")) n.partitions = split(r.at("Partitions"), ',');
  return n;
}

}  // namespace

bool NodeInfo::drained_or_draining() const { return state.find("DRAIN") != std::string::npos; }
bool NodeInfo::reboot_pending() const { return state.find("REBOOT") != std::string::npos; }

std::map<std::string, std::string> parse_scontrol_record(const std::string& line) {
  std::map<std::string, std::string> out;
  std::size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    if (pos >= line.size()) break;
    auto eq = line.find('=', pos);
    if (eq == std::string::npos) break;
    std::string key = line.substr(pos, eq - pos);
    // The value ends at the next " Key=" (a space followed by a key); this keeps values with
    // spaces (Reason=, Comment=, Command=) whole.
    std::size_t end = eq + 1;
    for (;;) {
      auto sp = line.find(' ', end);
      if (sp == std::string::npos) {
        end = line.size();
        break;
      }
      if (is_key_start(line, sp + 1)) {
        end = sp;
        break;
      }
      end = sp + 1;
    }
    out[key] = line.substr(eq + 1, end - eq - 1);
    pos = end;
  }
  return out;
}

ScontrolClient::ScontrolClient(std::string scontrol, std::chrono::milliseconds timeout)
    : scontrol_(std::move(scontrol)), timeout_(timeout) {}

std::expected<std::string, std::string> ScontrolClient::scontrol(const std::vector<std::string>& args) {
  std::vector<std::string> argv{scontrol_};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  auto r = run_process(argv, timeout_);
  if (!r) return std::unexpected(r.error());
  if (r->timed_out) return std::unexpected(cmd + ": Slurm did not answer within " + std::to_string(timeout_.count()) + " ms");
  if (r->exit_code != 0) {
    std::string err = r->err.empty() ? r->out : r->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return std::unexpected(cmd + ": " + (err.empty() ? "exit " + std::to_string(r->exit_code) : err));
  }
  return r->out;
}

std::expected<void, std::string> ScontrolClient::command(const std::vector<std::string>& args) {
  auto r = scontrol(args);
  if (!r) return std::unexpected(r.error());
  return {};
}

std::string ScontrolClient::sibling(const std::string& name) const {
  auto slash = scontrol_.rfind('/');
  return slash == std::string::npos ? name : scontrol_.substr(0, slash + 1) + name;
}

std::expected<void, std::string> ScontrolClient::cancel(std::uint32_t job_id) {
  auto r = run_process({sibling("scancel"), std::to_string(job_id)}, timeout_);
  if (!r) return std::unexpected(r.error());
  if (r->timed_out) return std::unexpected("scancel " + std::to_string(job_id) + ": Slurm did not answer");
  if (r->exit_code != 0) return std::unexpected("scancel " + std::to_string(job_id) + ": " + r->err);
  return {};
}

std::expected<void, std::string> ScontrolClient::signal_job(std::uint32_t job_id, const std::string& signal) {
  // Plain --signal reaches every step but not the batch script; --full would add the batch script
  // and all its children, srun included, which forwards the signal to its tasks: they would get it
  // twice. So the steps, then the batch shell alone (--batch): every process of the job sees it once.
  for (const char* only_batch : {"", "--batch"}) {
    std::vector<std::string> argv{sibling("scancel"), "--signal=" + signal};
    if (*only_batch != '\0') argv.emplace_back(only_batch);
    argv.push_back(std::to_string(job_id));
    std::string what;
    for (std::size_t i = 1; i < argv.size(); ++i) what += " " + argv[i];
    what = "scancel" + what;
    auto r = run_process(argv, timeout_);
    if (!r) return std::unexpected(r.error());
    if (r->timed_out) return std::unexpected(what + ": Slurm did not answer");
    if (r->exit_code != 0) return std::unexpected(what + ": " + r->err);
  }
  return {};
}

std::expected<NodeInfo, std::string> ScontrolClient::node(const std::string& name) {
  auto out = scontrol({"show", "node", name, "-o"});
  if (!out) return std::unexpected(out.error());
  return node_from(parse_scontrol_record(out->substr(0, out->find('\n'))));
}

std::expected<std::vector<NodeInfo>, std::string> ScontrolClient::partition_nodes(const std::string& partition) {
  auto out = scontrol({"show", "node", "-o"});
  if (!out) return std::unexpected(out.error());
  std::vector<NodeInfo> nodes;
  std::istringstream in(*out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto n = node_from(parse_scontrol_record(line));
    for (const auto& p : n.partitions)
      if (p == partition) nodes.push_back(n);
  }
  return nodes;
}

std::expected<JobInfo, std::string> ScontrolClient::job(std::uint32_t job_id) {
  auto out = scontrol({"show", "job", std::to_string(job_id), "-o"});
  if (!out) return std::unexpected(out.error());
  auto r = parse_scontrol_record(out->substr(0, out->find('\n')));
  JobInfo j;
  j.job_id = to_u32(r["JobId"]);
  j.state = r["JobState"];
  j.reason = r["Reason"];
  j.restart_count = to_u32(r["Restarts"]);
  j.node_list = r["NodeList"];
  j.comment = r["Comment"] == "(null)" ? "" : r["Comment"];
  return j;
}

std::expected<std::vector<std::uint32_t>, std::string> ScontrolClient::jobs_on_node(const std::string& node) {
  // squeue is the only client that filters by node.
  auto r = run_process({sibling("squeue"), "-h", "-w", node, "-t", "RUNNING,COMPLETING", "-o", "%i"}, timeout_);
  if (!r) return std::unexpected(r.error());
  if (r->timed_out) return std::unexpected("squeue -w " + node + ": Slurm did not answer");
  if (r->exit_code != 0) return std::unexpected("squeue -w " + node + ": " + r->err);
  std::vector<std::uint32_t> ids;
  for (const auto& w : split(r->out, '\n'))
    if (auto id = to_u32(w)) ids.push_back(id);
  return ids;
}

std::expected<void, std::string> ScontrolClient::drain(const std::string& node, const std::string& reason) {
  return command({"update", "nodename=" + node, "state=drain", "reason=" + reason});
}

std::expected<void, std::string> ScontrolClient::reboot(const std::string& node, const std::string& reason) {
  return command({"reboot", "ASAP", "nextstate=RESUME", "reason=" + reason, node});
}

std::expected<void, std::string> ScontrolClient::resume(const std::string& node) {
  return command({"update", "nodename=" + node, "state=resume"});
}

std::expected<void, std::string> ScontrolClient::set_reason(const std::string& node, const std::string& reason) {
  return command({"update", "nodename=" + node, "reason=" + reason});
}

std::expected<void, std::string> ScontrolClient::requeue(std::uint32_t job_id) {
  return command({"requeue", std::to_string(job_id)});
}

std::expected<void, std::string> ScontrolClient::release_hold(std::uint32_t job_id) {
  // Not "now": slurmd refuses to launch a job on a node that killed the same job id within the same
  // second ("Job N already killed, do not launch batch job": its credential revocation is stamped in
  // whole seconds), which fails the restarted job outright. One second later is always safe, because
  // the hold is only released once every node has reported the kill (the job left COMPLETING).
  return command({"update", "jobid=" + std::to_string(job_id), "starttime=now+1"});
}

std::expected<void, std::string> ScontrolClient::set_comment(std::uint32_t job_id, const std::string& comment) {
  return command({"update", "jobid=" + std::to_string(job_id), "comment=" + comment});
}

}  // namespace ar::healthd
