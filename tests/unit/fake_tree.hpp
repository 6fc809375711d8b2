// Builds a fake host tree (sysfs, procfs, /dev) in a test's temp dir: one call per file.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.hpp"

namespace ar::test {

class FakeTree {
 public:
  const std::filesystem::path& root() const { return dir_.path(); }
  // Writes `content` to `path` (absolute, as on the host) under the root, creating its directories.
  void write(const std::string& path, const std::string& content) const {
    auto file = dir_.path() / std::filesystem::path(path).relative_path();
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << content;
  }
  void mkdir(const std::string& path) const { std::filesystem::create_directories(dir_.path() / std::filesystem::path(path).relative_path()); }
  void remove(const std::string& path) const { std::filesystem::remove_all(dir_.path() / std::filesystem::path(path).relative_path()); }

 private:
  TempDir dir_;
};

}  // namespace ar::test
