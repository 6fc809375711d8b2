// What the fuzz targets share: a private temp directory (for readers that only take a path), file
// writes, and the daemon's own way of turning a reply or a result into text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

namespace ar::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// One directory per fuzzer process, removed at exit. Each input overwrites the files it needs.
inline const std::filesystem::path& temp_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ar-fuzz.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("fuzz: mkdtemp failed");
    std::filesystem::path p(tmpl);
    static const std::filesystem::path for_exit = p;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(for_exit, ec);
    });
    return p;
  }();
  return dir;
}

// A fresh, empty directory under temp_dir() (a host root or state dir for one input).
inline std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = temp_dir() / name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path& file, std::string_view content) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) throw std::runtime_error("fuzz: cannot write " + file.string());
}

inline std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The daemon logs errors of bad input; a fuzzer's millions of inputs must not fill the terminal.
inline void quiet_logs() {
  static const bool done = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)done;
}

}  // namespace ar::fuzz
