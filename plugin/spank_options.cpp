#include "spank_options.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "options.hpp"
#include "plugin_state.hpp"

namespace ar::plugin {
namespace {

// Tells a value Slurm forwarded from one the user typed. In slurmstepd every value was forwarded. In
// srun, a value equal to the allocation's forwarded option variable came from that variable (Slurm
// processes it before the command line). The one ambiguity left: a user typing exactly the forwarded
// text on srun's command line inside such a job, which is then read as the bare flag.
ValueSource value_source(int remote, const char* optarg) {
  if (remote) return ValueSource::forwarded_by_slurm;
  const char* env = std::getenv(kForwardedOptionEnv);
  if (optarg != nullptr && env != nullptr && std::string_view(optarg) == env) return ValueSource::forwarded_by_slurm;
  return ValueSource::command_line;
}

// Every option callback: parse, say what is wrong (which makes sbatch/srun/salloc exit non-zero
// before submitting), or keep the value. Nothing may throw into Slurm.
template <typename Parsed, typename Store>
int take_option(Parsed parsed, Store store) {
  try {
    auto v = parsed();
    if (!v) {
      log_error(v.error());
      return -1;
    }
    store(*v);
    return 0;
  } catch (...) {
    return -1;
  }
}

int option_callback(int /*val*/, const char* optarg, int remote) {
  return take_option([&] { return parse_auto_resume_value(optarg, value_source(remote, optarg)); },
                     [](bool v) { state().auto_resume = v; });
}

int checkpoint_dir_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return parse_checkpoint_dir(optarg); },
                     [](const std::string& v) { state().checkpoint_dir = v; });
}

int max_resumes_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return parse_max_resumes(optarg); }, [](std::uint32_t v) { state().max_resumes = v; });
}

int heartbeat_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return parse_heartbeat_path(optarg); },
                     [](const std::string& v) {
                       state().heartbeat = v;
                       state().heartbeat_per_rank = false;
                     });
}

// The one given last wins: a job has one heartbeat, a file (or directory) or one file per rank.
int heartbeat_dir_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return parse_heartbeat_path(optarg); },
                     [](const std::string& v) {
                       state().heartbeat = v;
                       state().heartbeat_per_rank = true;
                     });
}

int stall_callback(int /*val*/, const char* optarg, int /*remote*/) {
  return take_option([&] { return parse_stall(optarg); }, [](StallTimes v) { state().stall = v; });
}

// Slurm keeps a pointer to the options, so they must outlive the call.
struct spank_option heartbeat_option = {
    const_cast<char*>(kHeartbeatOptionName), const_cast<char*>("PATH"),
    const_cast<char*>("A file (or a directory, by its newest entry) this job's training loop keeps touching; when it "
                      "stands still for --auto-resume-stall, the job's nodes are checked and the job is resumed."),
    1, 0, heartbeat_callback};

struct spank_option heartbeat_dir_option = {
    const_cast<char*>(kHeartbeatDirOptionName), const_cast<char*>("DIR"),
    const_cast<char*>("A directory (on storage every node sees) for one heartbeat file per task: each task touches "
                      "$AUTO_RESUME_HEARTBEAT_FILE once per training step. When the job stands still for "
                      "--auto-resume-stall, the node behind it is found and kept off the job's next attempt."),
    1, 0, heartbeat_dir_callback};

struct spank_option stall_option = {
    const_cast<char*>(kStallOptionName), const_cast<char*>("SECONDS[,FIRST]"),
    const_cast<char*>("How long the heartbeat may stand still (default 300), and before its first beat (default "
                      "the larger of SECONDS and 1800)."),
    1, 0, stall_callback};

struct spank_option max_resumes_option = {
    const_cast<char*>(kMaxResumesOptionName), const_cast<char*>("N"),
    const_cast<char*>("Resume this job at most N times (the cluster's own cap still applies)."), 1, 0,
    max_resumes_callback};

struct spank_option checkpoint_dir_option = {
    const_cast<char*>(kCheckpointOptionName), const_cast<char*>("DIR"),
    const_cast<char*>("Where this job writes checkpoints (one subdirectory each, complete once it holds a file "
                      "named COMPLETE). Each step gets the newest complete one in $AUTO_RESUME_CHECKPOINT."),
    1, 0, checkpoint_dir_callback};

struct spank_option auto_resume_option = {
    const_cast<char*>(kOptionName), const_cast<char*>("[0|1]"),
    const_cast<char*>("Requeue and restart this job (or step) from its last checkpoint when a node it runs on "
                      "is found faulty. --auto-resume alone means 1; 0 opts a step out."),
    2, 0, option_callback};

}  // namespace

void register_options(spank_t sp) {
  for (auto* opt : {&auto_resume_option, &checkpoint_dir_option, &max_resumes_option, &heartbeat_option, &heartbeat_dir_option,
                    &stall_option})
    if (spank_option_register(sp, opt) != ESPANK_SUCCESS) log_error(std::string("cannot register --") + opt->name);
}

}  // namespace ar::plugin
