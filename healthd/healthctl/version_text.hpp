// healthctl's own version, the project's (healthd/version.hpp.in, generated into the build tree).
#pragma once

#include <string>

namespace ar::healthctl {

// "healthctl 0.1.0": what --version prints.
std::string version_line();

}  // namespace ar::healthctl
