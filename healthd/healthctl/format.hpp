// Human-readable rendering of daemon replies for healthctl. Pure functions: tested on JSON values.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ar::healthctl {

std::string format_ping(const nlohmann::json& data);
std::string format_status(const nlohmann::json& data);
std::string format_jobs(const nlohmann::json& data);
std::string format_explain(const nlohmann::json& data);

}  // namespace ar::healthctl
