#include "reply_fields.hpp"

#include "text.hpp"

namespace ar::healthctl {

namespace {
const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}
}  // namespace

const nlohmann::json& empty_object() {
  static const nlohmann::json e = nlohmann::json::object();
  return e;
}

const nlohmann::json& empty_array() {
  static const nlohmann::json e = nlohmann::json::array();
  return e;
}

std::string text_of(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto* m = member(j, key);
  return m && m->is_string() ? printable(m->get_ref<const std::string&>()) : fallback;
}

std::int64_t int_of(const nlohmann::json& j, const char* key, std::int64_t fallback) {
  const auto* m = member(j, key);
  if (!m) return fallback;
  if (m->is_number_unsigned()) {
    const auto v = m->get<std::uint64_t>();
    return v > static_cast<std::uint64_t>(INT64_MAX) ? fallback : static_cast<std::int64_t>(v);
  }
  if (m->is_number_integer()) return m->get<std::int64_t>();
  if (m->is_number_float()) {
    const auto v = m->get<double>();
    return v >= -9.2e18 && v <= 9.2e18 ? static_cast<std::int64_t>(v) : fallback;
  }
  return fallback;
}

double number_of(const nlohmann::json& j, const char* key, double fallback) {
  const auto* m = member(j, key);
  return m && m->is_number() ? m->get<double>() : fallback;
}

bool bool_of(const nlohmann::json& j, const char* key, bool fallback) {
  const auto* m = member(j, key);
  return m && m->is_boolean() ? m->get<bool>() : fallback;
}

const nlohmann::json& object_of(const nlohmann::json& j, const char* key) {
  const auto* m = member(j, key);
  return m && m->is_object() ? *m : empty_object();
}

const nlohmann::json& array_of(const nlohmann::json& j, const char* key) {
  const auto* m = member(j, key);
  return m && m->is_array() ? *m : empty_array();
}

bool has_number(const nlohmann::json& j, const char* key) {
  const auto* m = member(j, key);
  return m && m->is_number();
}

}  // namespace ar::healthctl
