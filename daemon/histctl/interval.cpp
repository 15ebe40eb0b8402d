// SPDX-License-Identifier: GPL-2.0-only
#include "histctl/interval.h"

#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include "histctl/hist_json.h"

namespace histd::histctl {

namespace {

using nlohmann::json;

constexpr const char* kTotals[] = {"hits", "dropped", "missed"};

uint64_t count(const json& object, const std::string& name) {
  if (!object.is_object()) return 0;
  auto it = object.find(name);
  return it != object.end() ? count_of(*it).value_or(0) : 0;
}

double rate(uint64_t delta, double seconds) { return std::round(static_cast<double>(delta) / seconds * 1000) / 1000; }

// Whether the table went back to 0 since `before`: a count went down, or an
// entry went away.
bool was_reset(const json& before, const json& now, const std::map<std::string, const json*>& now_values) {
  for (const char* name : kTotals)
    if (count(object_of(now, "totals"), name) < count(object_of(before, "totals"), name)) return true;
  for (const json& e : array_of(before, "entries")) {
    auto it = now_values.find(object_of(e, "keys").dump());
    if (it == now_values.end()) return true;
    for (const auto& [name, v] : object_of(e, "values").items())
      if (count(*it->second, name) < count_of(v).value_or(0)) return true;
  }
  return false;
}

json table_interval(const json* before, const json& now, double seconds) {
  std::map<std::string, const json*> now_values, before_values;
  for (const json& e : array_of(now, "entries")) now_values[object_of(e, "keys").dump()] = &object_of(e, "values");
  const bool reset = before && was_reset(*before, now, now_values);
  if (before && !reset)
    for (const json& e : array_of(*before, "entries"))
      before_values[object_of(e, "keys").dump()] = &object_of(e, "values");
  const json& totals = object_of(now, "totals");
  const json& before_totals = before && !reset ? object_of(*before, "totals") : object_of(json(), "totals");
  json out{{"trigger", now.value("trigger", "")}, {"reset", reset}, {"totals", totals}, {"deltas", json::object()}};
  if (seconds > 0) out["rates"] = json::object();
  for (const char* name : kTotals) {
    const uint64_t delta = count(totals, name) - count(before_totals, name);
    out["deltas"][name] = delta;
    if (seconds > 0) out["rates"][name] = rate(delta, seconds);
  }
  json entries = json::array();
  for (const json& e : array_of(now, "entries")) {
    const json& keys = object_of(e, "keys");
    const json& values = object_of(e, "values");
    auto old = before_values.find(keys.dump());
    json entry{{"keys", keys}, {"values", values}, {"deltas", json::object()}};
    if (seconds > 0) entry["rates"] = json::object();
    for (const auto& [name, v] : values.items()) {
      const uint64_t was = old == before_values.end() ? 0 : count(*old->second, name);
      const uint64_t delta = count_of(v).value_or(0) - was;
      entry["deltas"][name] = delta;
      if (seconds > 0) entry["rates"][name] = rate(delta, seconds);
    }
    entries.push_back(std::move(entry));
  }
  out["entries"] = std::move(entries);
  return out;
}

}  // namespace

json event_interval(const json& before, const json& now, double seconds) {
  std::map<std::string, const json*> previous;
  for (const json& t : array_of(before, "tables")) previous[trigger_of(t)] = &t;
  json tables = json::array();
  for (const json& t : array_of(now, "tables")) {
    auto it = previous.find(trigger_of(t));
    tables.push_back(table_interval(it == previous.end() ? nullptr : it->second, t, seconds));
  }
  return json{{"event", now.value("event", "")}, {"tables", std::move(tables)}};
}

bool changed(const json& entry) {
  for (const auto& [name, d] : object_of(entry, "deltas").items())
    if (count_of(d).value_or(0) != 0) return true;
  return false;
}

}  // namespace histd::histctl
