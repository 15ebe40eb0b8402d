// SPDX-License-Identifier: GPL-2.0-only
#include "histctl/percentiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "histctl/hist_json.h"
#include "histd/modifier.h"
#include "histd/parse.h"

namespace histd::histctl {

namespace {

using modifier::KeyTransform;
using nlohmann::json;

std::string written(const parse::FieldRef& ref) {
  if (ref.modifiers.empty()) return ref.name;
  return ref.name + "." + modifier::printed(ref.modifiers[0].kind, ref.modifiers[0].buckets);
}

KeyChoice choice_of(const parse::FieldRef& ref) {
  KeyChoice c{ref.name, written(ref), {}};
  if (!ref.modifiers.empty()) {
    c.scale.transform = modifier::info(ref.modifiers[0].kind).transform;
    c.scale.buckets = ref.modifiers[0].buckets;
  }
  return c;
}

bool is_bucket_key(const parse::FieldRef& ref) {
  if (ref.modifiers.empty()) return false;
  const KeyTransform t = modifier::info(ref.modifiers[0].kind).transform;
  return t == KeyTransform::Log2 || t == KeyTransform::Buckets;
}

// A key whose entries hold plain numbers: no modifier renders it (.usecs
// only converts), and the first entry's value is a number.
bool is_plain_number(const parse::FieldRef& ref, const json& entries) {
  if (ref.name.empty() || ref.name == "common_stacktrace") return false;
  if (!ref.modifiers.empty() && modifier::info(ref.modifiers[0].kind).transform != KeyTransform::Usecs) return false;
  if (entries.empty()) return true;
  const json& keys = object_of(entries.front(), "keys");
  return keys.contains(ref.name) && keys[ref.name].is_number_integer();
}

std::string names(const std::vector<const parse::FieldRef*>& refs) {
  std::string out;
  for (const parse::FieldRef* r : refs) out += (out.empty() ? "" : ", ") + written(*r);
  return out;
}

double rounded(double v) { return std::round(v * 1000) / 1000; }

// A percentile as a JSON number: whole ones as integers (50, 99.9).
json number(const quantile::Percentile& p) {
  if (p.millionths % 1'000'000 == 0) return json(p.millionths / 1'000'000);
  return json(p.value());
}

json bound(uint64_t v, bool is_signed) { return is_signed ? json(static_cast<int64_t>(v)) : json(v); }

}  // namespace

Result<KeyChoice, std::string> choose_key(const json& table, const KeyRules& rules) {
  auto cmd = parse::parse_hist(trigger_of(table));
  if (!cmd) return unexpected("cannot read its trigger line: " + cmd.error().message());
  const json& entries = array_of(table, "entries");
  std::vector<const parse::FieldRef*> buckets, plain;
  for (const parse::FieldRef& ref : cmd->keys) {
    if (!rules.wanted.empty() && (ref.name == rules.wanted || written(ref) == rules.wanted)) return choice_of(ref);
    if (is_bucket_key(ref))
      buckets.push_back(&ref);
    else if (is_plain_number(ref, entries))
      plain.push_back(&ref);
  }
  if (!rules.wanted.empty()) {
    // A key the trigger names otherwise (an expression): its entries' numbers.
    if (!entries.empty() && object_of(entries.front(), "keys").contains(rules.wanted))
      return KeyChoice{rules.wanted, rules.wanted, {}};
    std::vector<const parse::FieldRef*> all;
    for (const parse::FieldRef& ref : cmd->keys) all.push_back(&ref);
    return unexpected(fmt::format("it has no key '{}' (its keys: {})", rules.wanted, names(all)));
  }
  if (buckets.size() == 1) return choice_of(*buckets[0]);
  if (buckets.size() > 1)
    return unexpected(fmt::format("it has several bucket keys ({}): name one with --key", names(buckets)));
  if (rules.plain_allowed && plain.size() == 1) return choice_of(*plain[0]);
  if (rules.plain_allowed && plain.size() > 1)
    return unexpected(fmt::format("it has several numeric keys ({}): name one with --key", names(plain)));
  return unexpected(std::string(rules.plain_allowed
                                    ? "it has no .log2, .buckets or numeric key to take percentiles over"
                                    : "it has no .log2 or .buckets key"));
}

Result<json, std::string> percentiles_json(const json& entries, const KeyChoice& key,
                                           std::span<const quantile::Percentile> wanted) {
  std::vector<quantile::Row> rows;
  std::map<std::string, json> label_keys;
  quantile::Scale scale = key.scale;
  const std::string sibling = key.name + ".";
  for (const json& e : entries) {
    const json& keys = object_of(e, "keys");
    const json& values = object_of(e, "values");
    if (!keys.contains(key.name) || !keys[key.name].is_number_integer())
      return unexpected(fmt::format("its key '{}' is not a number", key.name));
    const auto hits = values.contains("hitcount") ? count_of(values["hitcount"]) : std::nullopt;
    if (!hits) return unexpected(std::string("it has no hitcount (nohitcount): nothing to weigh its key by"));
    json labels = json::object();
    for (const auto& [name, v] : keys.items())
      if (name != key.name && !name.starts_with(sibling)) labels[name] = v;
    quantile::Row row;
    row.labels = labels.dump();
    const json& k = keys[key.name];
    if (k.is_number_unsigned()) {
      row.key = k.get<uint64_t>();
    } else {
      row.key = static_cast<uint64_t>(k.get<int64_t>());
      if (static_cast<int64_t>(row.key) < 0) scale.is_signed = true;
    }
    row.hits = *hits;
    label_keys.emplace(row.labels, std::move(labels));
    rows.push_back(std::move(row));
  }
  json sets = json::array();
  for (const quantile::LabelSet& s : quantile::percentiles(rows, scale, wanted)) {
    json ps = json::array();
    for (const quantile::Estimate& e : s.estimates)
      ps.push_back({{"name", "p" + e.percentile.text()},
                    {"percentile", number(e.percentile)},
                    {"lower", bound(e.bucket.lower, scale.is_signed)},
                    {"upper", bound(e.bucket.upper, scale.is_signed)},
                    {"estimate", rounded(e.estimate)},
                    {"exact", e.exact}});
    sets.push_back({{"keys", label_keys.at(s.labels)}, {"hits", s.hits}, {"percentiles", std::move(ps)}});
  }
  return json{{"key", key.written}, {"label_sets", std::move(sets)}};
}

json event_percentiles(const json& doc, const KeyRules& rules, std::span<const quantile::Percentile> wanted) {
  json out{{"event", doc.value("event", "")}, {"percentiles", json::array()}, {"tables", json::array()}};
  for (const quantile::Percentile& p : wanted) out["percentiles"].push_back(number(p));
  for (const json& t : array_of(doc, "tables")) {
    json o{{"trigger", t.value("trigger", "")}, {"totals", object_of(t, "totals")}};
    auto key = choose_key(t, rules);
    auto result = key ? percentiles_json(array_of(t, "entries"), *key, wanted)
                      : Result<json, std::string>(unexpected(key.error()));
    if (result)
      o.update(*result);
    else
      o["error"] = result.error();
    out["tables"].push_back(std::move(o));
  }
  return out;
}

std::string estimate_text(double estimate) {
  std::string s = fmt::format("{:.1f}", estimate);
  if (s.ends_with(".0")) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

std::string percentile_cell(const json& p) {
  if (p.value("exact", false)) return "=" + p.at("lower").dump();
  return fmt::format("[{}, {}] ~{}", p.at("lower").dump(), p.at("upper").dump(),
                     estimate_text(p.value("estimate", 0.0)));
}

std::string percentiles_text(const json& result) {
  std::string out;
  for (const json& t : array_of(result, "tables")) {
    if (t.contains("error")) continue;
    if (!out.empty()) out += "\n";
    out += fmt::format(
        "# {}\n# percentiles of {} by hitcount; in [lower, upper]: the bucket that holds it, "
        "both ends included\n",
        t.value("trigger", ""), t.value("key", ""));
    const json& sets = array_of(t, "label_sets");
    if (sets.empty()) out += "no entries\n";
    size_t width = 0;
    for (const json& s : sets)
      for (const json& p : array_of(s, "percentiles")) width = std::max(width, p.value("name", "").size());
    for (const json& s : sets) {
      const json& keys = object_of(s, "keys");
      const uint64_t hits = s.contains("hits") ? count_of(s["hits"]).value_or(0) : 0;
      out += fmt::format("{}hits: {}{}\n", keys.empty() ? "" : keys.dump() + "  ", hits,
                         hits == 0 ? " (no percentiles)" : "");
      for (const json& p : array_of(s, "percentiles")) {
        const std::string name = fmt::format("{:<{}}", p.value("name", ""), width);
        if (p.value("exact", false))
          out += fmt::format("  {}  = {} (exact)\n", name, p.at("lower").dump());
        else
          out += fmt::format("  {}  in [{}, {}]  ~ {} (estimate within the bucket)\n", name, p.at("lower").dump(),
                             p.at("upper").dump(), estimate_text(p.value("estimate", 0.0)));
      }
    }
    const json& totals = object_of(t, "totals");
    if (const uint64_t missed = totals.value("missed", uint64_t{0}))
      out += fmt::format("Missed: {} (events the kernel kept from the table: not counted here)\n", missed);
    if (const uint64_t dropped = totals.value("dropped", uint64_t{0}))
      out += fmt::format("Dropped: {} (events the full table did not count: not counted here)\n", dropped);
  }
  return out;
}

}  // namespace histd::histctl
