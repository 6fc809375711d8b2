#include "runtime/process.hpp"

#include "runtime/proc_stat.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ar::healthd {
namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

// ---- The environment of children --------------------------------------------------------------

struct ChildEnv {
  std::mutex mutex;
  bool set = false;
  std::vector<std::string> entries;
};

ChildEnv& child_env() {
  static auto* env = new ChildEnv;  // never destroyed: children may start while statics are torn down
  return *env;
}

std::vector<std::string> build_environment(const std::vector<std::string>& extra_names) {
  std::vector<std::string> entries = {std::string("PATH=") + kChildPath, "LANG=C", "LC_ALL=C", "HOME=/"};
  std::set<std::string> seen = {"PATH", "LANG", "LC_ALL", "HOME"};
  auto pass = [&](const std::string& name) {
    if (!seen.insert(name).second) return;
    if (const char* v = ::getenv(name.c_str())) entries.push_back(name + "=" + v);
  };
  for (const auto& n : kDefaultChildEnv) pass(n);
  for (const auto& n : extra_names) pass(n);
  return entries;
}

// ---- The process table, read from /proc ---------------------------------------------------------

struct ProcInfo {
  pid_t ppid = 0;
  char state = '?';
};

std::optional<ProcInfo> read_stat(pid_t pid) {
  const auto st = read_proc_stat("/proc", static_cast<std::uint32_t>(pid));
  if (!st) return std::nullopt;
  return ProcInfo{static_cast<pid_t>(st->ppid), st->state};
}

std::map<pid_t, ProcInfo> process_table() {
  std::map<pid_t, ProcInfo> table;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    pid_t pid = 0;
    auto [p, e] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (e != std::errc() || p != name.data() + name.size()) continue;
    if (auto info = read_stat(pid)) table[pid] = *info;
  }
  return table;
}

bool alive(pid_t pid) {
  auto info = read_stat(pid);
  return info && info->state != 'Z' && info->state != 'X';
}

// True if `pid` has one of the pipes `inodes` open (a process that still writes into our child's output).
bool holds_pipe(pid_t pid, const std::set<ino_t>& inodes) {
  std::error_code ec;
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/fd";
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st{};
    if (::stat(it->path().c_str(), &st) == 0 && S_ISFIFO(st.st_mode) && inodes.count(st.st_ino)) return true;
  }
  return false;
}

// ---- Children of healthd and the reaper ---------------------------------------------------------
//
// Two kinds of waiters exist for healthd's children, and they must never take each other's:
//  - run_process waits for the one pid it spawned (waitpid(pid)), and needs that pid's status;
//  - the reaper waits for every other child: orphans of our children's trees that reparented to
//    healthd (it is a child subreaper), and children whose run_process gave up on them after the
//    kill grace.
// `waited` holds the pids a live run_process call waits for. A pid is added in the same critical
// section as its posix_spawn, and the reaper reaps only under that lock, only pids it found (by
// ppid in /proc) and only those not in `waited`: it can never reap a pid before its caller has
// claimed it. Nothing else in healthd may call wait/waitpid for "any child"; every child must be
// started through run_process.
class Children {
 public:
  static Children& get() {
    static auto* c = new Children;  // never destroyed: the reaper thread outlives main's statics
    return *c;
  }

  // Spawns and claims the pid in one step (see above).
  int spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
            char* const argv[], char* const envp[]) {
    std::lock_guard lock(mutex_);
    int rc = ::posix_spawn(pid, path, actions, attr, argv, envp);
    if (rc == 0) waited_.insert(*pid);
    return rc;
  }

  // The caller reaped `pid` itself.
  void reaped(pid_t pid) {
    std::lock_guard lock(mutex_);
    waited_.erase(pid);
  }

  // The caller no longer waits for `pid` (given up, or its tree was killed): the reaper takes
  // it and any orphans over, and looks soon.
  void hand_over(pid_t pid) {
    {
      std::lock_guard lock(mutex_);
      waited_.erase(pid);
      busy_until_ = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    }
    wake_.notify_one();
  }

  // Something may have orphaned processes (a tree was killed): look now, and often for a while.
  void poke() {
    {
      std::lock_guard lock(mutex_);
      busy_until_ = std::max(busy_until_, std::chrono::steady_clock::now() + std::chrono::seconds(5));
    }
    wake_.notify_one();
  }

 private:
  Children() { std::thread([this] { loop(); }).detach(); }

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      // Quiet: a slow look for orphans of children that ended normally. Busy: every 100 ms.
      auto busy = std::chrono::steady_clock::now() < busy_until_;
      wake_.wait_for(lock, busy ? std::chrono::milliseconds(100) : std::chrono::seconds(10));
      lock.unlock();
      auto table = process_table();
      lock.lock();
      const pid_t self = ::getpid();
      for (const auto& [pid, info] : table) {
        if (info.ppid != self || waited_.count(pid)) continue;
        int status = 0;
        ::waitpid(pid, &status, WNOHANG);  // not a zombie yet: 0, looked at again later
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::set<pid_t> waited_;
  std::chrono::steady_clock::time_point busy_until_{};
};

// ---- Killing a child's whole tree ---------------------------------------------------------------

// Every process of the child `pid`'s tree: its descendants through ppid links, and healthd's
// own children (orphans reparented to it) that hold the child's pipes, with their descendants.
std::set<pid_t> tree_of(pid_t pid, const std::set<ino_t>& pipes, const std::map<pid_t, ProcInfo>& table) {
  const pid_t self = ::getpid();
  std::multimap<pid_t, pid_t> children;
  for (const auto& [p, info] : table) children.emplace(info.ppid, p);
  std::vector<pid_t> todo = {pid};
  for (auto [it, end] = children.equal_range(self); it != end; ++it)
    if (it->second != pid && holds_pipe(it->second, pipes)) todo.push_back(it->second);
  std::set<pid_t> tree;
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    if (!tree.insert(p).second) continue;
    for (auto [it, end] = children.equal_range(p); it != end; ++it) todo.push_back(it->second);
  }
  return tree;
}

// Stops the tree first (a stopped process cannot fork, and its children keep their ppid link while
// it lives), round after round until no new member shows up, then kills all of it. Returns the
// processes killed, the child itself included.
std::set<pid_t> kill_tree(pid_t pid, const std::set<ino_t>& pipes) {
  std::set<pid_t> caught;
  for (int round = 0; round < 100; ++round) {
    bool found_new = false;
    for (pid_t p : tree_of(pid, pipes, process_table())) {
      if (!caught.insert(p).second) continue;
      found_new = true;
      ::kill(p, SIGSTOP);
    }
    if (!found_new) break;
  }
  ::kill(-pid, SIGKILL);  // the process group too: members the scan may have raced with
  for (pid_t p : caught) ::kill(p, SIGKILL);
  return caught;
}

// Waits until every process in `killed` is gone (or a zombie) or the grace ends.
void wait_gone(const std::set<pid_t>& killed, std::chrono::steady_clock::time_point until) {
  for (pid_t p : killed)
    while (alive(p) && std::chrono::steady_clock::now() < until) ::usleep(1000);
}

bool executable_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

bool is_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void set_child_environment(const std::vector<std::string>& extra_names) {
  auto entries = build_environment(extra_names);
  auto& env = child_env();
  std::lock_guard lock(env.mutex);
  env.entries = std::move(entries);
  env.set = true;
}

std::vector<std::string> child_environment() {
  auto& env = child_env();
  std::lock_guard lock(env.mutex);
  if (!env.set) {
    env.entries = build_environment({});
    env.set = true;
  }
  return env.entries;
}

std::expected<std::string, std::string> resolve_program(const std::string& name) {
  if (name.empty()) return std::unexpected(std::string("empty program name"));
  if (name.find('\0') != std::string::npos) return std::unexpected(std::string("program name holds a NUL byte"));
  if (name.front() == '/') {
    if (!executable_file(name)) return std::unexpected(name + ": not an executable file");
    return name;
  }
  if (name.find('/') != std::string::npos)
    return std::unexpected(name + ": a relative path is not allowed (give an absolute path or a bare name)");
  std::istringstream dirs(kChildPath);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    auto candidate = dir + "/" + name;
    if (executable_file(candidate)) return candidate;
  }
  return std::unexpected(name + ": not found in " + kChildPath);
}

std::expected<void, std::string> become_child_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
    return std::unexpected(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno));
  return {};
}

std::string first_output_line(const ProcessResult& r, bool stderr_first) {
  const std::string* order[2] = {&r.out, &r.err};
  if (stderr_first) std::swap(order[0], order[1]);
  for (const std::string* text : order) {
    const auto start = text->find_first_not_of(" \t\r\n");
    if (start != std::string::npos) return sanitize(text->substr(start, text->find('\n', start) - start), 200);
  }
  return {};
}

std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv,
                                                      std::chrono::milliseconds timeout, std::size_t max_output,
                                                      const std::vector<std::string>& extra_env,
                                                      const std::function<bool()>& cancel) {
  if (argv.empty()) return std::unexpected(std::string("run: empty command"));
  if (argv[0].empty() || argv[0].front() != '/')
    return std::unexpected("run " + argv[0] + ": not an absolute path (programs are resolved when the config is loaded)");
  Pipe out, err;
  if (::pipe2(out.fd, O_CLOEXEC) != 0 || ::pipe2(err.fd, O_CLOEXEC) != 0)
    return std::unexpected("run " + argv[0] + ": pipe: " + std::strerror(errno));
  std::set<ino_t> pipes;
  for (int fd : {out.fd[0], err.fd[0]}) {
    struct stat st{};
    if (::fstat(fd, &st) == 0) pipes.insert(st.st_ino);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  // Whatever healthd has open without O_CLOEXEC (a socket accepted by a library, an inherited fd)
  // stays out of the child: it could keep healthd's listening socket alive after a SIGKILL.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills the program and anything it started.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto env_entries = child_environment();
  env_entries.insert(env_entries.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  auto& children = Children::get();
  pid_t pid = -1;
  int rc = children.spawn(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return std::unexpected("run " + argv[0] + ": " + std::strerror(rc));
  ::close(out.fd[1]);
  out.fd[1] = -1;
  ::close(err.fd[1]);
  err.fd[1] = -1;

  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    if (cancel && cancel()) {
      result.timed_out = result.cancelled = true;
      break;
    }
    if (cancel) left = std::min<long>(left, 100);
    int n = ::poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) {
        auto room = max_output > sinks[i]->size() ? max_output - sinks[i]->size() : 0;
        sinks[i]->append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(r)));
      } else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  // After closing its output the program may still run until the deadline; wait for it as long.
  // Killed, it gets kKillGrace to disappear: a process stuck in the kernel (D state) does not die
  // on SIGKILL, and must not hold this caller (a Slurm action, a check) forever.
  std::optional<std::chrono::steady_clock::time_point> give_up;
  auto kill_all = [&] {
    result.timed_out = true;
    give_up = std::chrono::steady_clock::now() + kKillGrace;
    auto killed = kill_tree(pid, pipes);
    killed.erase(pid);
    wait_gone(killed, *give_up);
    children.poke();  // the killed orphans are healthd's children now: the reaper waits for them
  };
  if (result.timed_out) kill_all();
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      // Only run_process waits for its pid (see Children): this is a bug, not a child's doing.
      int e = errno;
      children.reaped(pid);
      return std::unexpected("run " + argv[0] + ": waitpid: " + std::strerror(e));
    }
    const auto now = std::chrono::steady_clock::now();
    if (!give_up && (now >= deadline || (cancel && cancel()))) {
      result.cancelled = now < deadline;
      kill_all();
    }
    if (give_up && now >= *give_up) {
      children.hand_over(pid);
      return std::unexpected("run " + argv[0] + ": killed at the deadline but still not gone after " +
                             std::to_string(kKillGrace.count()) + " ms (pid " + std::to_string(pid) +
                             ", stuck in the kernel?): left to the reaper");
    }
    ::usleep(1000);
  }
  children.reaped(pid);
  if (!result.timed_out) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) result.signaled = true;
  }
  return result;
}

}  // namespace ar::healthd
