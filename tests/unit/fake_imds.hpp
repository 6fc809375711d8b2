// Runs tests/fakes/imds_server.py (the fake EC2 metadata service) for one test, on a free port, with
// its scenario in a temporary directory the test writes files into.
#pragma once

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "temp_dir.hpp"

namespace ar::test {

class FakeImds {
 public:
  FakeImds() {
    std::filesystem::create_directories(dir_ / "meta");
    const std::string script = std::string(AR_SOURCE_DIR) + "/tests/fakes/imds_server.py";
    const std::string root = (dir_ / "meta").string(), port_file = (dir_ / "port").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execlp("python3", "python3", script.c_str(), root.c_str(), "--port-file", port_file.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 500 && port_ == 0; ++i) {
      std::ifstream in(port_file);
      if (!(in >> port_)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~FakeImds() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  FakeImds(const FakeImds&) = delete;
  FakeImds& operator=(const FakeImds&) = delete;

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Writes meta-data/PATH (e.g. "spot/instance-action"); remove() takes it away (404).
  void put(const std::string& path, const std::string& body) {
    auto file = dir_ / "meta" / path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << body;
  }
  void remove(const std::string& path) { std::filesystem::remove(dir_ / "meta" / path); }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace ar::test
