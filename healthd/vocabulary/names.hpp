// The one way a word of the vocabulary is written and read: a table of (value, name) rows, each
// value named once (vocabulary/action.hpp kActionNames, vocabulary/remedy.hpp kRemedyNames).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace ar::healthd {

// `value`'s name in `table`; "none" for a value the table does not list.
template <class E, std::size_t N>
std::string name_in(const std::pair<E, std::string_view> (&table)[N], E value) {
  for (const auto& [v, name] : table)
    if (v == value) return std::string(name);
  return "none";
}

// The value `name` stands for in `table`, if any.
template <class E, std::size_t N>
std::optional<E> value_named(const std::pair<E, std::string_view> (&table)[N], std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

// "none, warn, drain": the names of `set`, for messages (`to_string` of E names each).
template <class E>
std::string names_of(std::span<const E> set) {
  std::string out;
  for (auto v : set) out += (out.empty() ? "" : ", ") + to_string(v);
  return out;
}

}  // namespace ar::healthd
