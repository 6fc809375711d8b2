// Reading a daemon's reply without trusting its shape: each accessor returns the default when the
// value is missing or of another type (nlohmann's value() would throw), so a reply from another
// version of healthd, or from something else on the socket, prints what it can and never aborts.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ar::healthctl {

// The empty object and array the accessors hand out for a missing or mistyped member.
const nlohmann::json& empty_object();
const nlohmann::json& empty_array();

// A string member as one printable line (printable(): a terminal acts on none of it).
std::string text_of(const nlohmann::json& j, const char* key, const std::string& fallback = "");
std::int64_t int_of(const nlohmann::json& j, const char* key, std::int64_t fallback = 0);
double number_of(const nlohmann::json& j, const char* key, double fallback = 0);
bool bool_of(const nlohmann::json& j, const char* key, bool fallback = false);
const nlohmann::json& object_of(const nlohmann::json& j, const char* key);
const nlohmann::json& array_of(const nlohmann::json& j, const char* key);
// True when `key` is present and is a number (null, absent or of another type: false).
bool has_number(const nlohmann::json& j, const char* key);

}  // namespace ar::healthctl
