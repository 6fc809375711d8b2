// Lenient readers of JSON healthd made itself but reads back as data (the GPU checks' per-GPU figures
// in their results' detail, gpu_inventory.cpp): a field missing or of another type reads as absent,
// never throws. State files
// read from disk use the strict readers of state/json_fields.hpp instead.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ar::healthd::json_read {

inline std::string string_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

inline bool flag_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace ar::healthd::json_read
