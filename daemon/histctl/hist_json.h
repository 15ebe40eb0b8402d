// SPDX-License-Identifier: GPL-2.0-only
// Reading hist.json-shaped values (docs/histctl.md) without copies or
// exceptions: histctl takes whatever histd sent, and a missing member reads
// as empty.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

namespace histd::histctl {

// `o`'s member `name` when it is an object, else an empty object.
inline const nlohmann::json& object_of(const nlohmann::json& o, const char* name) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!o.is_object()) return empty;
  auto it = o.find(name);
  return it != o.end() && it->is_object() ? *it : empty;
}

// `o`'s member `name` when it is an array, else an empty array.
inline const nlohmann::json& array_of(const nlohmann::json& o, const char* name) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!o.is_object()) return empty;
  auto it = o.find(name);
  return it != o.end() && it->is_array() ? *it : empty;
}

// A count: a number that is a whole and not negative (hist.json's values and
// totals; parsed, they are unsigned, but one built as a JSON int may not be).
inline std::optional<uint64_t> count_of(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

// A table's trigger line without the state the trigger file prints after
// it (" [active]", " [paused]"): the trigger as written, the same while it
// is paused.
inline std::string trigger_of(const nlohmann::json& table) {
  std::string line = table.is_object() ? table.value("trigger", "") : "";
  for (std::string_view state : {" [active]", " [paused]"})
    if (line.ends_with(state)) line.resize(line.size() - state.size());
  return line;
}

}  // namespace histd::histctl
