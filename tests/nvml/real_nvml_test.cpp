// NVIDIA's own NVML against healthd (issue 36): every libnvidia-ml.so.1 of Debian's registry that
// scripts/real-nvml.sh fetched (AR_REAL_NVML_LIBS="SUITE=PATH:..."), loaded the way healthd loads it.
//   - Every entry point healthd resolves is in each real library, and in the newest one under the
//     name healthd prefers (an entry point renamed or dropped by NVIDIA fails here first);
//   - with the real library and no NVIDIA driver (this machine has none: what a GPU node looks like
//     when its driver failed to load), the GPU check reports what docs/checks.md says: GPUs expected,
//     GPU-NVML-MISSING with NVML's own error text; none expected, not applicable. Never a crash or a hang.
// No library named is a failure, not a skip: the test exists to run against the real ones.
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "checks/gpu/gpu_check.hpp"
#include "collectors/nvml/nvml_library.hpp"

using namespace ar::healthd;
using namespace std::chrono_literals;

namespace {

std::vector<std::pair<std::string, std::string>> real_libraries() {
  std::vector<std::pair<std::string, std::string>> libs;
  const char* env = std::getenv("AR_REAL_NVML_LIBS");
  std::stringstream list(env ? env : "");
  for (std::string item; std::getline(list, item, ':');) {
    const auto eq = item.find('=');
    if (eq != std::string::npos) libs.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return libs;
}

const CheckResult* find(const std::vector<CheckResult>& rs, const std::string& check) {
  for (const auto& r : rs)
    if (r.check == check) return &r;
  return nullptr;
}

}  // namespace

TEST(RealNvml, EveryEntryPointHealthdResolvesIsInEachLibraryAndTheNewestHasThePreferredNames) {
  const auto libs = real_libraries();
  ASSERT_GE(libs.size(), 3u) << "AR_REAL_NVML_LIBS must name the libraries scripts/real-nvml.sh fetched";
  for (std::size_t i = 0; i < libs.size(); ++i) {
    const auto& [suite, path] = libs[i];
    const bool newest = i + 1 == libs.size();
    auto points = NvmlLibrary::entry_points(path);
    ASSERT_TRUE(points) << suite << ": " << points.error();
    ASSERT_GE(points->size(), 30u) << suite;
    std::size_t older = 0;
    for (const auto& p : *points) {
      EXPECT_FALSE(p.taken.empty()) << suite << " (" << path << ") lacks " << p.preferred << " (" << p.serves << ")";
      if (p.taken != p.preferred) {
        ++older;
        std::cout << suite << ": " << p.preferred << " not there; takes " << p.taken << "\n";
        EXPECT_FALSE(newest) << suite << ", the newest library, lacks the preferred " << p.preferred << " (has "
                             << p.taken << ")";
      }
    }
    std::cout << suite << ": " << points->size() << " entry points, " << points->size() - older
              << " under the preferred name (" << path << ")\n";
  }
}

TEST(RealNvml, WithoutADriverTheGpuCheckSaysNvmlIsMissingWhereGpusAreExpectedAndNothingElsewhere) {
  const auto libs = real_libraries();
  ASSERT_FALSE(libs.empty()) << "AR_REAL_NVML_LIBS must name the libraries scripts/real-nvml.sh fetched";
  for (const auto& [suite, path] : libs) {
    GpuThresholds expected;
    expected.required = true;
    GpuCheck with_gpus(path, expected, 10s);
    const auto t0 = std::chrono::steady_clock::now();
    const auto rs = with_gpus.run();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << suite;
    const auto* count = find(rs, "gpu.count");
    ASSERT_NE(count, nullptr) << suite;
    EXPECT_EQ(count->status, Status::fault) << suite;
    EXPECT_EQ(count->code, "GPU-NVML-MISSING") << suite;
    // NVML's own words for its own error, through nvmlErrorString.
    EXPECT_NE(count->message.find("nvmlInit: Driver Not Loaded"), std::string::npos) << suite << ": " << count->message;
    std::cout << suite << ": " << count->code << ": " << count->message << "\n";

    GpuCheck without(path, GpuThresholds{}, 10s);
    const auto none = without.run();
    for (const auto& r : none) EXPECT_NE(r.status, Status::fault) << suite << ": " << r.check << ": " << r.message;
    const auto* nvml = find(none, "gpu.nvml");
    ASSERT_NE(nvml, nullptr) << suite;
    EXPECT_FALSE(nvml->applicable) << suite << ": no GPUs expected, no driver: not applicable";
    EXPECT_NE(nvml->message.find("Driver Not Loaded"), std::string::npos) << suite << ": " << nvml->message;
  }
}
