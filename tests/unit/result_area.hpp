// The result of one area of a check ("edac.uncorrected", "node.clock") among a run's results, for
// the check tests; throws when the run gave none of that name.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "checks/check.hpp"

namespace ar::test {

// The name as a C string: a std::string made from a literal at the call would be a temporary, and
// GCC 14 warns (-Wdangling-reference) that the result might refer to it.
inline const healthd::CheckResult& area(const std::vector<healthd::CheckResult>& rs, const char* check) {
  for (const auto& r : rs)
    if (r.check == check) return r;
  throw std::runtime_error(std::string("no result for ") + check);
}

}  // namespace ar::test
